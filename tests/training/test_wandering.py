"""The wandering expert (crl_jax/training/wandering.py): its random actions
are admissible and never idle, it reads every step's feedback, at rate 0
it is the expert; its episodes on households games are capped at the RL
turn cap, share their games with the demonstrations, and reach the
extractor's warm start only when warm_start.extractor_wanders asks."""
import dataclasses

import numpy as np
import pytest

from crl_jax.envs.alfworld_expert import PICK, kind_of
from crl_jax.envs.alfworld_lessons import goal_object
from crl_jax.envs.registry import make_expert
from crl_jax.training import warm_stage
from crl_jax.training.components import collect_demos, task_sources
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.tasks import episode_cap
from crl_jax.training.wandering import WanderingExpert, wandering_demos
from crl_jax.training.warm_cache import actor_key, warm_start_key
from crl_jax.training.warmstart import play_expert
from experiments.configs import load_preset

SMALL = ["env.households=6", "env.pool_households=2", "env.unseen_households=1",
         "env.num_generated=60", "env.num_eval_tasks=8", "warm_start.demos=12"]


class _CountingExpert:
    def __init__(self):
        self.calls = 0

    def reset(self):
        self.calls = 0

    def act(self, env):
        self.calls += 1
        return "own"


def test_random_actions_are_admissible_not_idle_and_the_expert_reads_every_turn():
    env = dataclasses.make_dataclass("Env", ["last_admissible"])(
        ("look", "inventory", "go to shelf 1", "take pen 1 from desk 1"))
    inner = _CountingExpert()
    always = WanderingExpert(inner, 1.0, np.random.default_rng(0))
    sent = [always.act(env) for _ in range(200)]
    assert set(sent) == {"go to shelf 1", "take pen 1 from desk 1"} and inner.calls == 200
    never = WanderingExpert(_CountingExpert(), 0.0, np.random.default_rng(0))
    assert {never.act(env) for _ in range(20)} == {"own"}
    half = WanderingExpert(_CountingExpert(), 0.5, np.random.default_rng(0))
    share = np.mean([half.act(env) != "own" for _ in range(2000)])
    assert abs(share - 0.5) < 0.05  # binomial sd 0.011
    idle = dataclasses.make_dataclass("Env", ["last_admissible"])(("look",))
    assert always.act(idle) == "own"  # nothing to wander to: its own action
    with pytest.raises(ValueError, match="rate"):
        WanderingExpert(inner, 1.5, np.random.default_rng(0))


@pytest.fixture(scope="module")
def cfg():
    return apply_overrides(load_preset("alfworld_households_cpu"), SMALL)


@pytest.fixture(scope="module")
def source_and_demos(cfg):
    src = task_sources(cfg, "generated", None, 30)[0]
    return src, collect_demos(cfg, [src])


def test_at_rate_zero_it_plays_the_experts_game(source_and_demos):
    src, demos = source_and_demos
    env = src.make()
    try:
        own = [play_expert(env, d.task, make_expert(src.env_name), 10, src.env_name).actions
               for d in demos]
    finally:
        env.close()
    same = wandering_demos([src], demos, 0.0, 10, np.random.default_rng(0))
    assert [d.actions for d in same] == own


def test_wandering_episodes_are_capped_share_the_games_and_still_find_objects(cfg,
                                                                           source_and_demos):
    src, demos = source_and_demos
    cap = episode_cap(cfg)
    wander = wandering_demos([src], demos, 0.3, cap, np.random.default_rng(1))
    assert [d.task for d in wander] == [d.task for d in demos]
    assert all(len(d.actions) <= cap for d in wander)
    assert any(w.actions[:len(d.actions)] != d.actions for w, d in zip(wander, demos))
    # it reads the feedback of its random steps, so it still picks up the
    # goal's object in games it wanders in (the expert finds it in them all)
    picked = [any((m := PICK.match(o.strip())) and kind_of(m.group(1)) == goal_object(w.goal)
                  for o in w.observations[1:]) for w in wander]
    assert np.mean(picked) >= 0.5, picked
    with pytest.raises(ValueError, match="no task source"):
        wandering_demos([], demos, 0.3, cap, np.random.default_rng(1))


def test_extractor_wanders_is_extractor_only_and_needs_households(cfg, source_and_demos,
                                                                  monkeypatch):
    wanders = apply_overrides(cfg, ["warm_start.extractor_wanders=0.3"])
    assert warm_start_key(wanders) != warm_start_key(cfg) and actor_key(wanders) == actor_key(cfg)
    with pytest.raises(ValueError, match="extractor_wanders"):
        apply_overrides(cfg, ["warm_start.extractor_wanders=1.5"])
    with pytest.raises(ValueError, match="extractor_wanders shapes households"):
        apply_overrides(load_preset("alfworld_cpu"), ["warm_start.extractor_wanders=0.3"])
    src, demos = source_and_demos
    seen = []
    monkeypatch.setattr(warm_stage, "lesson_sft_samples", lambda d, *a, **k: seen.append(d) or [])
    monkeypatch.setattr(warm_stage.setup, "supervised_warm_start", lambda *a, **k: [])
    tok = dataclasses.make_dataclass("Tok", ["pad_id"])(0)
    for c in (cfg, wanders):
        warm_stage._train_extractor(c, demos, [src], None, tok, "", None)
    assert seen[0] == demos and seen[1][:len(demos)] == demos and len(seen[1]) == 2 * len(demos)
