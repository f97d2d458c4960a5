"""Options that reproduce the authors' released code (the paper presets'
released profile): a format failure ends the episode with its own
reward, the extractor consolidates guided episodes only and sees whole
observations, entries must have a title and a content."""
import dataclasses
import types

import numpy as np
import pytest

from crl_jax.envs.registry import make_env
from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.consolidation import _valid_merge_output
from crl_jax.experience.operations import AddOperation, parse_operations, structured_text
from crl_jax.rl import prompts
from crl_jax.rl.episode_stats import batch_metrics, episode_rewards
from crl_jax.rl.rollout import Episode, RolloutConfig, RolloutEngine, Turn
from crl_jax.training.config import AdvantageSpec
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from crl_jax.training.step import feed_manager
from tests.rl.test_tools_and_distillation import CharTokenizer, ScriptedSampler


@pytest.mark.parametrize("ends", [True, False])
def test_an_answer_without_an_action_ends_the_episode_when_asked(ends):
    tok = CharTokenizer()
    env = make_env("alfworld", split="generated", num_generated=2, seed=0)
    engine = RolloutEngine(ScriptedSampler(tok, [["", "look", "look"]]), tok,
                           RolloutConfig(max_turns=3, history=1, end_on_format_failure=ends))
    ep = engine.play([env], [0], [False])[0]
    assert ep.format_failed == ends
    assert len(ep.turns) == (1 if ends else 3) and ep.turns[0].invalid
    spec = AdvantageSpec(failure_reward=0.0, format_failure_reward=-1.0)
    assert episode_rewards([ep], spec)[0] == (-1.0 if ends else 0.0)
    assert episode_rewards([ep], dataclasses.replace(spec, format_failure_reward=None))[0] == 0.0
    assert batch_metrics([ep]).get("format_failures", 0.0) == (1.0 if ends else 0.0)


def test_whole_observations_for_the_extractor():
    obs = "You arrive at countertop 1. On the countertop 1, you see an apple 1, and a mug 2."
    assert prompts.trajectory_text(["go to countertop 1"], [obs], 0) == f"go to countertop 1 -> {obs}"
    cut = prompts.trajectory_text(["go to countertop 1"], [obs], 40)
    assert cut.endswith("...") and len(cut) == len("go to countertop 1 -> ") + 40


def test_structured_entries():
    ok = '[{"op": "add", "entry": {"title": "Heat first", "content": "go to microwave 1"}}]'
    got = parse_operations(ok, 0, structured=True)
    assert got.operations == (AddOperation("<title>Heat first</title><content>go to microwave 1</content>"),)
    tagged = '[{"op": "add", "entry": "<title>T</title> <content>C</content>"}]'
    assert parse_operations(tagged, 0, structured=True).operations == (
        AddOperation("<title>T</title> <content>C</content>"),)
    for bad in ('[{"op": "add", "entry": "just a plan"}]',
                '[{"op": "add", "entry": {"title": "", "content": "c"}}]',
                '[{"op": "add", "entry": "<title>T</title>"}]'):
        parsed = parse_operations(bad, 0, structured=True)
        assert parsed.operations == () and "title" in parsed.rejected[0]
        assert parse_operations(bad.replace('"title": ""', '"title": "x"'), 0).operations  # any text
    assert structured_text({"title": "a", "content": 3}) is None
    assert _valid_merge_output(["<title>a</title><content>b</content>"], 100, structured=True)
    assert not _valid_merge_output(["<title>a</title><content>b</content>", "plain"], 100,
                                   structured=True)
    assert _valid_merge_output(["plain"], 100)
    with pytest.raises(ValueError, match="entry_format"):
        ExperienceConfig(entry_format="xml")


class _Manager:
    def __init__(self):
        self.submitted, self.credited = [], []
        self.training_buffer = types.SimpleNamespace(
            credit=lambda key, won, baseline: self.credited.append((key, won, baseline)))

    def submit_episode(self, record):
        self.submitted.append(record)

    def merge(self, key, step):
        pass


def _episode(guided, won, asks=()):
    ep = Episode(task=0, task_key="alfworld", goal="g", guided=guided, won=won, env_name="alfworld",
                 ask_keys=list(asks))
    obs = "x" * 100
    ep.turns.append(Turn([1], [2], np.zeros(1), "look", "look", obs, 0.0, (), False))
    return ep


@pytest.mark.parametrize("which", ["all", "guided"])
def test_which_episodes_are_consolidated(which):
    cfg = apply_overrides(load_preset("alfworld_cpu"), [f"experience.consolidate={which}",
                                                        "experience.trajectory_obs_chars=0",
                                                        "experience.merge_every=0"])
    run = types.SimpleNamespace(cfg=cfg, manager=_Manager())
    eps = [_episode(True, True), _episode(False, False, asks=("ask-1",)), _episode(False, True)]
    feed_manager(run, 3, eps)
    submitted = run.manager.submitted
    assert [r.success for r in submitted] == ([True] if which == "guided" else [True, False, True])
    assert submitted[0].trajectory == "look -> " + "x" * 100  # whole observation
    # Only-guided consolidation still credits a free episode's search-and-ask call.
    assert run.manager.credited == ([("ask-1", False, 0.0)] if which == "guided" else [])
