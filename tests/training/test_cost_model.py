"""The accelerator-hours estimate (crl_jax/training/cost_model.py) against
values worked out by hand on a tiny architecture and a unit accelerator."""
import dataclasses

import pytest

from crl_jax.training import cost_model
from crl_jax.training.cost_model import Assumptions, Shape
from experiments.configs import load_preset
from models.config import DecoderConfig

TINY = DecoderConfig(family="qwen3", vocab_size=10, hidden_size=4, intermediate_size=8,
                     num_layers=2, num_heads=2, num_kv_heads=1, head_dim=2, tie_embeddings=True)
EXACT = Assumptions(sampled_share=0.4, compute_util=1.0, bandwidth_util=1.0)


@pytest.fixture
def unit_accelerators(monkeypatch):
    """1 FLOP/s; 2 or 0.5 bytes/s: decode bound by compute, then by memory."""
    monkeypatch.setitem(cost_model.ACCELERATORS, "fast_memory", (1.0, 2.0))
    monkeypatch.setitem(cost_model.ACCELERATORS, "slow_memory", (1.0, 0.5))


def test_shape_counts_weights_kv_and_attention_by_hand():
    # per layer: q 4x4 + k, v 2 x 4x2 + o 4x4 + MLP 3 x 4x8 = 144; 2 layers + head 10x4
    shape = Shape.of(TINY, remat=False)
    assert shape.matmul_params == 2 * 144 + 40
    assert shape.weight_bytes == (2 * 144 + 40) * 4  # tied: the head is the embedding
    assert shape.kv_bytes_per_token == 2 * 2 * 2 * 4  # K and V, 2 layers, 1 head of 2, f32
    assert shape.attention_width == 2 * 4
    untied = Shape.of(dataclasses.replace(TINY, tie_embeddings=False, param_dtype="bfloat16"),
                      remat=True)
    assert untied.weight_bytes == (2 * 144 + 80) * 2 and untied.training_factor() == 4


def test_role_seconds_by_hand(unit_accelerators):
    """2 rows of 10 tokens, 4 sampled. A token costs 2 x 328 + 4 x 8 x context
    FLOPs. Prompt: 12 tokens at context 5: 12 x 816 = 9,792; training (no
    remat, 3x): 3 x 20 x 816 = 48,960; decode at mean context 8: 2 x 912 =
    1,824 FLOPs and 1,312 + 2 x 8 x 32 = 1,824 bytes a step, 4 steps."""
    shape = Shape.of(TINY, remat=False)
    fast = cost_model.role_seconds(shape, 2, 10, 4, True, "fast_memory", EXACT)
    assert fast == pytest.approx(9792 + 48960 + 4 * 1824)  # compute-bound decode
    slow = cost_model.role_seconds(shape, 2, 10, 4, False, "slow_memory", EXACT)
    assert slow == pytest.approx(9792 + 4 * 1824 / 0.5)  # memory-bound decode, no training


def test_a_run_sums_its_steps_evaluations_and_extractor(unit_accelerators):
    cfg = load_preset("alfworld_cpu")
    shape = Shape.of(TINY, False)
    t, length = cfg.train, cfg.rollout.max_prompt_tokens
    sampled = int(length * EXACT.sampled_share)
    episodes = t.tasks_per_step * t.group_size
    comp = cost_model.run_device_hours(cfg, TINY, TINY, "fast_memory", EXACT)
    passes = cost_model.evaluation_passes(cfg)
    assert passes == 2 * (1 + t.steps // t.eval_every)  # with and without experience
    actor_s = (t.steps * cost_model.role_seconds(shape, episodes, length, sampled, True,
                                                 "fast_memory", EXACT)
               + cost_model.role_seconds(shape, passes * cfg.env.num_eval_tasks, length, sampled,
                                         False, "fast_memory", EXACT))
    assert comp["actor"] * 3600 == pytest.approx(actor_s)
    assert comp["extractor"] > 0 and comp["total"] == pytest.approx(comp["actor"] + comp["extractor"])
    for mode, evals in (("none", passes // 2), ("oracle", passes), ("offline", passes)):
        other = dataclasses.replace(cfg, experience=dataclasses.replace(cfg.experience, mode=mode))
        hours = cost_model.run_device_hours(other, TINY, TINY, "fast_memory", EXACT)
        assert hours["extractor"] == 0 and cost_model.evaluation_passes(other) == evals
    frozen = dataclasses.replace(cfg, experience=dataclasses.replace(cfg.experience,
                                                                     mode="static_online"))
    static = cost_model.run_device_hours(frozen, TINY, TINY, "fast_memory", EXACT)
    assert 0 < static["extractor"] < comp["extractor"]  # it writes the bank, never trains
    # consolidating guided episodes only halves the extractor's calls, not its training
    guided = dataclasses.replace(cfg, experience=dataclasses.replace(
        cfg.experience, consolidate="guided", extractor_updates_per_step=0))
    every = dataclasses.replace(guided, experience=dataclasses.replace(
        guided.experience, consolidate="all"))
    half = cost_model.run_device_hours(guided, TINY, TINY, "fast_memory", EXACT)["extractor"]
    whole = cost_model.run_device_hours(every, TINY, TINY, "fast_memory", EXACT)["extractor"]
    assert half == pytest.approx(whole * cfg.experience.guided_fraction, rel=0.02)


def test_paper_presets_are_estimated_from_their_published_architectures():
    released = cost_model.device_hours(load_preset("alfworld"))
    paper = cost_model.device_hours(load_preset("alfworld:paper"))
    # the released profile's 32,768-token sequences cost more than the paper's 16,384
    assert released["actor"] > paper["actor"] > 0 and released["extractor"] > 0
    with pytest.raises(ValueError, match="valid: h100"):
        cost_model.device_hours(load_preset("alfworld"), "tpu-v9")
