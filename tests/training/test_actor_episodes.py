"""The warm-started actor's episodes for the extractor's warm start
(crl_jax/training/actor_episodes.py): an episode becomes the demonstration
the extractor reads as RL shows it; the actor plays the chosen share of the
demonstrations' games at the RL turn cap, the guided ones reading their
household's first-home lesson; warm_start.extractor_actor_episodes is an
extractor-only setting that needs households and reaches the extractor's
warm start only when set."""
import dataclasses

import numpy as np
import pytest

from crl_jax.rl.episode import Episode, Turn
from crl_jax.training import components, warm_stage
from crl_jax.training.actor_episodes import actor_episode_demos, chosen_games, episode_demo
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.lesson_demos import LessonBook
from crl_jax.training.tasks import episode_cap, household_split
from crl_jax.training.warm_cache import actor_key, warm_start_key
from experiments.configs import load_preset

SMALL = ["env.households=6", "env.pool_households=2", "env.unseen_households=1",
         "env.num_generated=60", "env.num_eval_tasks=8", "warm_start.demos=12"]


def _turn(action, observation, asked=None, text=""):
    return Turn([1], [2], np.zeros(1), text or action or "", action, observation, 0.0, (),
                action is None, asked=asked)


def test_an_episode_reads_as_the_extractor_is_shown_it():
    ep = Episode(task=3, task_key="k", goal="put a mug in shelf", guided=True,
                 experience="mug: go to shelf 1", first_observation="You are in the middle.",
                 turns=[_turn("go to desk 1", "On the desk 1, you see a mug 1."),
                        _turn(None, "Nothing happens.", text="mug please"),
                        _turn(None, "the bank says: shelf", asked="mug"),
                        _turn("take mug 1 from desk 1", "You pick up the mug 1 from the desk 1.")],
                 won=False, env_name="Display name")
    d = episode_demo(ep, "alfworld")
    assert (d.env_name, d.task, d.goal, d.won, d.experience) == (
        "alfworld", 3, "put a mug in shelf", False, "mug: go to shelf 1")
    # the ask turn is gone; an answer naming no action shows as its text
    assert d.actions == ["go to desk 1", "mug please", "take mug 1 from desk 1"]
    assert d.observations == ["You are in the middle.", "On the desk 1, you see a mug 1.",
                              "Nothing happens.", "You pick up the mug 1 from the desk 1."]
    played = dataclasses.replace(ep, turns=[t for t in ep.turns if t.asked is None])
    from crl_jax.rl import prompts
    assert prompts.trajectory_text(d.actions, d.observations[1:]) == played.trajectory_text()


def test_the_chosen_share_of_games():
    demos = list(range(10))
    assert chosen_games(demos, 0.0, np.random.default_rng(0)) == []
    assert chosen_games(demos, 1.0, np.random.default_rng(0)) == demos
    half = chosen_games(demos, 0.5, np.random.default_rng(0))
    assert len(half) == 5 and half == sorted(half) and set(half) <= set(demos)
    assert len(chosen_games(demos, 0.25, np.random.default_rng(0))) == 2  # round(2.5) -> 2
    with pytest.raises(ValueError, match="fraction"):
        chosen_games(demos, 1.5, np.random.default_rng(0))


@pytest.fixture(scope="module")
def cfg():
    return apply_overrides(load_preset("alfworld_households_cpu"), SMALL)


def test_the_actor_plays_the_demonstrations_games_as_rl_plays_them(cfg, tmp_path_factory):
    """An untrained tiny actor (what it plays does not matter here, only how)."""
    src = components.task_sources(cfg, "generated", None, 30)[0]
    demos = components.collect_demos(cfg, [src])
    tok = warm_stage.setup.env_tokenizer(cfg, demos, str(tmp_path_factory.mktemp("tok")))
    actor, _ = components._learners(cfg, tok, tok)
    cap = episode_cap(cfg)
    played = actor_episode_demos(cfg, actor, tok, [src], demos, 0.5, cap,
                                 np.random.default_rng(3))
    assert len(played) == 6
    assert {d.task for d in played} <= {d.task for d in demos}
    assert len({d.task for d in played}) == 6 and all(d.source == "actor" for d in played)
    book, env = LessonBook(household_split(cfg)), src.make()
    try:
        for d in played:
            assert 1 <= len(d.actions) <= cap and len(d.observations) == len(d.actions) + 1
            first_obs, info = env.reset(d.task)
            assert d.observations[0] == first_obs and d.goal == info.goal
            if d.experience is not None:  # guided: the household's first home
                assert d.experience == book.first(env.games[d.task]).text
    finally:
        env.close()
    # with guided_fraction 0.5, 6 games: both kinds appear for this seed
    assert {d.experience is None for d in played} == {True, False}
    with pytest.raises(ValueError, match="no task source"):
        actor_episode_demos(cfg, actor, tok, [], demos, 0.5, cap, np.random.default_rng(3))


def test_extractor_actor_episodes_is_extractor_only_and_reaches_its_warm_start(cfg, monkeypatch):
    mine = apply_overrides(cfg, ["warm_start.extractor_actor_episodes=0.5"])
    assert warm_start_key(mine) != warm_start_key(cfg) and actor_key(mine) == actor_key(cfg)
    with pytest.raises(ValueError, match="extractor_actor_episodes"):
        apply_overrides(cfg, ["warm_start.extractor_actor_episodes=1.5"])
    with pytest.raises(ValueError, match="extractor_actor_episodes shapes households"):
        apply_overrides(load_preset("alfworld_cpu"), ["warm_start.extractor_actor_episodes=0.5"])
    demos, seen, asked = ["d1", "d2"], [], []
    monkeypatch.setattr(warm_stage, "lesson_sft_samples", lambda d, *a, **k: seen.append(d) or [])
    monkeypatch.setattr(warm_stage.setup, "supervised_warm_start", lambda *a, **k: [])
    monkeypatch.setattr(warm_stage, "actor_episode_demos",
                        lambda c, actor, tok, s, d, f, cap, rng: asked.append((actor, tok, f, cap))
                        or ["a1"])
    tok = dataclasses.make_dataclass("Tok", ["pad_id"])(0)
    for c in (cfg, mine):
        warm_stage._train_extractor(c, demos, [], None, tok, "", None, "the actor", tok)
    assert seen == [demos, [*demos, "a1"]]
    assert asked == [("the actor", tok, 0.5, episode_cap(cfg))]


def test_extractor_home_rate_draws_its_games_afresh_in_the_same_households(cfg, monkeypatch):
    """warm_start.extractor_home_rate: extractor-only, -1 or in [0, 1], needs
    households; the extractor's demonstrations are then the expert's on
    games of the warm start's households (never the RL pool's) at that rate."""
    from crl_jax.envs.alfworld_households import household_index
    uniform = apply_overrides(cfg, ["warm_start.extractor_home_rate=0"])
    assert warm_start_key(uniform) != warm_start_key(cfg) and actor_key(uniform) == actor_key(cfg)
    for bad in ("-0.5", "1.5"):
        with pytest.raises(ValueError, match="extractor_home_rate"):
            apply_overrides(cfg, [f"warm_start.extractor_home_rate={bad}"])
    with pytest.raises(ValueError, match="extractor_home_rate shapes households"):
        apply_overrides(load_preset("alfworld_cpu"), ["warm_start.extractor_home_rate=0"])
    run_src = components.task_sources(cfg, "generated", None, 30)[0]
    run_demos = components.collect_demos(cfg, [run_src])
    demos, sources = components.demos_at_home_rate(cfg, 0.0)
    env, run_env = sources[0].make(), run_src.make()
    try:
        pool = {h.index for h in household_split(cfg).rl_members()}
        homes = [household_index(env.games[d.task].id) for d in demos]
        # game i of the split is dealt to the same household at any rate
        assert homes == [household_index(run_env.games[d.task].id) for d in run_demos]
        assert not set(homes) & pool
        # the same rooms, the objects placed afresh: some game's problem differs
        assert any(env.games[d.task].pddl_problem != run_env.games[d.task].pddl_problem
                   for d in demos)
    finally:
        env.close()
        run_env.close()
    seen, moved = [], []
    monkeypatch.setattr(warm_stage, "lesson_sft_samples", lambda d, *a, **k: seen.append(d) or [])
    monkeypatch.setattr(warm_stage.setup, "supervised_warm_start", lambda *a, **k: [])
    tok = dataclasses.make_dataclass("Tok", ["pad_id"])(0)
    same = apply_overrides(cfg, [f"warm_start.extractor_home_rate={cfg.env.home_rate}"])
    for c in (cfg, same, uniform):
        warm_stage._train_extractor(c, ["run's"], [], None, tok, "", None, demos_at=lambda c, rate:
                                    moved.append(rate) or (["fresh"], ["src"]))
    assert seen == [["run's"], ["run's"], ["fresh"]] and moved == [0.0]
