"""Learner updates cut each micro-batch to its own width (micro_batch_plan):
the plan against hand-worked cases, and trimmed updates against the same
updates run at the batch's full width."""
import jax
import numpy as np
import pytest

from crl_jax.rl.batch import Sample, micro_batch_plan, pack_samples

from crl_jax.rl.learner import Learner, OptimConfig
from kernels.policy_losses import PolicyLossConfig
from models.config import DecoderConfig
from models.decoder import init_decoder


def _mask(lengths, width):
    return np.arange(width)[None, :] < np.asarray(lengths)[:, None]


def test_plan_sorts_rows_longest_first_and_cuts_to_ladder_widths():
    mask = _mask([5, 70, 0, 33, 12, 0], 96)
    plan = micro_batch_plan(mask, 2)
    # longest first: 70 and 33 (width 96 = T), then 12 and 5
    # (width 32); the two empty rows make a micro-batch of padding, dropped.
    assert [(r.tolist(), w) for r, w in plan] == [([1, 3], 96), ([4, 0], 32)]
    full = micro_batch_plan(mask, 2, trim=False)
    assert [(r.tolist(), w) for r, w in full] == [([0, 1], 96), ([2, 3], 96), ([4, 5], 96)]
    # the ladder 32, 48, 64, 96, 128, 192, 256: a row of exactly 64 stays at
    # 64, 65 goes to 96, 97 to 128, 129 to 192, 200 to 256 (T=256: no cap)
    widths = [w for _, w in micro_batch_plan(_mask([64, 65, 97, 129, 200, 33], 256), 1)]
    assert widths == [256, 192, 128, 96, 64, 48]
    # a batch of padding only keeps one micro-batch: the step still runs
    assert [(r.tolist(), w) for r, w in micro_batch_plan(_mask([0, 0, 0, 0], 64), 2)] == [
        ([0, 1], 32)]


def test_plan_rejects_a_batch_that_is_not_whole_micro_batches():
    with pytest.raises(ValueError, match="multiple of micro_batch=4"):
        micro_batch_plan(_mask([3, 4, 5], 32), 4)


@pytest.fixture(scope="module")
def model():
    cfg = DecoderConfig(family="qwen3", vocab_size=64, hidden_size=32, intermediate_size=64,
                        num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
                        tie_embeddings=True, qk_norm=True, eos_token_id=1)
    return init_decoder(cfg, seed=0)


def _mixed_batch(rng, n=10):
    """Prompts of 3 to 150 tokens, as in a mixture of short and long games."""
    samples = []
    for i in range(n):
        p = rng.integers(3, 64, size=int(rng.choice([3, 9, 40, 150]))).tolist()
        a = rng.integers(3, 64, size=int(rng.integers(1, 5))).tolist()
        lp = np.concatenate([np.zeros(len(p)), -rng.uniform(0.5, 3.0, size=len(a))])
        samples.append(Sample(p + a, [0] * len(p) + [1] * len(a), lp, float(rng.normal())))
    return samples


@pytest.mark.parametrize("kind", ["policy", "sft"])
def test_trimmed_update_equals_the_full_width_update(model, kind):
    samples = _mixed_batch(np.random.default_rng(7))
    packed = pack_samples(samples, pad_id=0, micro_batch=2)
    assert packed.tokens.shape[1] >= 150
    out = {}
    for trim in (True, False):
        learner = Learner(model, OptimConfig(lr=1e-2, micro_batch=2, grad_clip=0.0),
                          PolicyLossConfig.split_grpo_released(), trim_padding=trim)
        step = learner.policy_step if kind == "policy" else learner.sft_step
        metrics = [step(packed) for _ in range(2)]  # the second step sees the first's params
        out[trim] = (metrics, jax.tree.map(np.asarray, learner.params),
                     learner._grads._cache_size())
    (m_trim, p_trim, widths), (m_full, p_full, one) = out[True], out[False]
    assert widths > one  # the trimmed run compiled narrower programs beside the full width
    for a, b in zip(m_trim, m_full):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5, abs=1e-6)
        assert a["tokens_or_seqs"] == b["tokens_or_seqs"]
    for a, b in zip(jax.tree.leaves(p_trim), jax.tree.leaves(p_full)):
        np.testing.assert_allclose(a, b, atol=2e-5)
