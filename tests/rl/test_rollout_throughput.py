"""Rollout throughput in every step's metrics: the actor's sampled tokens,
per second of the rollout phase and per second inside the sampler."""
import pytest

from crl_jax.envs.registry import make_env
from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
from crl_jax.training.step import rollout_throughput
from tests.rl.test_tools_and_distillation import CharTokenizer, ScriptedSampler


def test_the_engine_counts_the_tokens_it_sampled():
    tok = CharTokenizer()
    envs = [make_env("alfworld", split="generated", num_generated=2, seed=0) for _ in range(2)]
    engine = RolloutEngine(ScriptedSampler(tok, [["look", "inventory"], ["look"]]), tok,
                           RolloutConfig(max_turns=2, history=1))
    eps = engine.play(envs, [0, 1], [False, False])
    assert engine.sampling_stats["tokens"] == sum(ep.generated_tokens for ep in eps) > 0
    assert engine.sampling_stats["seconds"] > 0
    again = engine.play(envs[:1], [0], [False])  # each play starts its own count
    assert engine.sampling_stats["tokens"] == again[0].generated_tokens == 2 * len("inventory") + 2


def test_throughput_by_hand():
    got = rollout_throughput({"tokens": 300, "sampling_s": 2.0}, 3.0)
    assert got == {"rollout/tokens": 300.0, "rollout/tokens_per_s": pytest.approx(100.0),
                   "rollout/sampler_tokens_per_s": pytest.approx(150.0)}
    assert rollout_throughput({"tokens": 0, "sampling_s": 0.0}, 0.0) == {"rollout/tokens": 0.0}
