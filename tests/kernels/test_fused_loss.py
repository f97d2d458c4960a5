"""fused_policy_loss (loss straight from hidden states) against the NumPy
reference (values) and the naive full-logits composition (gradients)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels import PolicyLossConfig, fused_policy_loss, naive_token_logprobs, policy_loss
from tests.kernels import numpy_reference as ref

B, T, D, V = 3, 5, 8, 29


def _inputs(seed=0, dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    hidden = jnp.asarray(rng.normal(size=(B, T, D)), dtype)
    unemb = jnp.asarray(rng.normal(size=(D, V)) * 0.5, dtype)
    targets = jnp.asarray(rng.integers(0, V, size=(B, T)), jnp.int32)
    lp, _ = ref.logprobs_and_entropy(np.asarray(hidden, np.float32),
                                     np.asarray(unemb, np.float32), targets)
    old = jnp.asarray(lp + rng.normal(scale=0.4, size=(B, T)), jnp.float32)
    adv = jnp.asarray(rng.normal(size=(B,)), jnp.float32)
    mask = np.ones((B, T), bool)
    mask[0, 3:] = False
    mask[2, :2] = False
    return hidden, unemb, targets, old, adv, jnp.asarray(mask)


def _sum_and_grads(fn, cfg, hidden, unemb, targets, old, adv, mask):
    """LossOutput and (d hidden, d unembedding) of loss_sum, in one jitted call
    (one compile is far cheaper than op-by-op dispatch of the chunk loop)."""
    @jax.jit
    def run(hidden, unemb, targets, old, adv, mask):
        def value(h, w):
            out = fn(h, w, targets, old, adv, mask, cfg)
            return out.loss_sum, out
        (_, out), grads = jax.value_and_grad(value, argnums=(0, 1), has_aux=True)(hidden, unemb)
        return out, grads
    return run(hidden, unemb, targets, old, adv, mask)


def _fused(chunk_size, temperature=1.0):
    return lambda h, w, t, o, a, m, c: fused_policy_loss(
        h, w, t, o, a, m, c, chunk_size=chunk_size, temperature=temperature,
        return_entropy=True)


def _naive(temperature=1.0):
    return lambda h, w, t, o, a, m, c: policy_loss(
        naive_token_logprobs(h, w, t, temperature=temperature), o, a, m, c)


CASES = [  # (loss config kwargs, chunk size, temperature); 15 tokens: 4, 7 do not divide it
    (dict(aggregation="token-mean"), 4, 1.0),
    (dict(aggregation="seq-mean-token-mean", dual_clip=2.0), 7, 1.0),
    (dict(aggregation="seq-mean-token-sum-norm", norm_constant=6.0, eps_high=0.28), 32, 0.7),
    (dict(ratio_level="sequence", aggregation="seq-mean-token-mean"), 4, 1.0),
    (dict(loss_type="cispo", aggregation="seq-mean-token-mean", unified_mask=True), 7, 0.7),
    (dict(loss_type="cispo", cispo_weight="abs_cap", cispo_abs_cap=1.2,
          aggregation="seq-mean-token-sum"), 1, 1.0),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_matches_reference_and_naive(case):
    kwargs, chunk, temperature = CASES[case]
    cfg = PolicyLossConfig(**kwargs)
    hidden, unemb, targets, old, adv, mask = _inputs(seed=case)
    out, (d_h, d_w) = _sum_and_grads(_fused(chunk, temperature), cfg, hidden, unemb, targets,
                                     old, adv, mask)
    lp, entropy = ref.logprobs_and_entropy(hidden, unemb, targets, temperature)
    np.testing.assert_allclose(out.loss_sum / out.count, ref.loss(lp, old, adv, mask, cfg),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.diagnostics["logprobs"], lp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.diagnostics["entropy_mean"], entropy[np.asarray(mask)].mean(),
                               rtol=1e-5)
    naive_out, (n_h, n_w) = _sum_and_grads(_naive(temperature), cfg, hidden, unemb, targets,
                                           old, adv, mask)
    assert float(out.count) == float(naive_out.count)
    np.testing.assert_allclose(d_h, n_h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(d_w, n_w, rtol=1e-4, atol=1e-6)
    for key in ("clip_frac_low", "clip_frac_high", "ratio_mean", "approx_kl"):
        np.testing.assert_allclose(out.diagnostics[key], naive_out.diagnostics[key], rtol=1e-5,
                                   atol=1e-7)


def test_fused_bf16_close_to_fp32():
    cfg = PolicyLossConfig(loss_type="cispo")
    hidden, unemb, targets, old, adv, mask = _inputs(seed=12, dtype=jnp.bfloat16)
    out, (d_h, d_w) = _sum_and_grads(_fused(4), cfg, hidden, unemb, targets, old, adv, mask)
    assert d_h.dtype == jnp.bfloat16 and d_w.dtype == jnp.bfloat16
    f32 = [x.astype(jnp.float32) for x in (hidden, unemb)]
    naive_out, (n_h, n_w) = _sum_and_grads(_naive(), cfg, *f32, targets, old, adv, mask)
    np.testing.assert_allclose(out.loss_sum, naive_out.loss_sum, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(d_h, np.float32), n_h, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(np.asarray(d_w, np.float32), n_w, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("ratio_level", ["token", "sequence"])
def test_fused_guard_rails(ratio_level):
    cfg = PolicyLossConfig(ratio_level=ratio_level, aggregation="seq-mean-token-mean")
    hidden, unemb, targets, old, adv, mask = _inputs(seed=13)
    # NaN hidden state and an ignore-index target at masked positions; a NaN
    # old log-prob at a masked-in token (dropped and reported).
    bad_hidden = hidden.at[0, 4].set(jnp.nan)
    bad_targets = targets.at[2, 0].set(-100)
    bad_old = old.at[1, 1].set(jnp.nan)
    out, (d_h, d_w) = _sum_and_grads(_fused(4), cfg, bad_hidden, unemb, bad_targets, bad_old,
                                     adv, mask)
    assert np.isfinite(float(out.loss_sum)) and np.isfinite(d_h).all() and np.isfinite(d_w).all()
    assert float(out.diagnostics["nonfinite_tokens"]) == 1
    clean_mask = mask.at[1, 1].set(False)
    # Equal to the clean batch with that token's loss zeroed (denominators keep it).
    naive_out, (n_h, n_w) = _sum_and_grads(
        lambda h, w, t, o, a, m, c: policy_loss(naive_token_logprobs(h, w, t), o, a, m, c),
        cfg, hidden, unemb, targets, old.at[1, 1].set(jnp.nan), adv, mask)
    np.testing.assert_allclose(out.loss_sum, naive_out.loss_sum, rtol=1e-5)
    np.testing.assert_allclose(d_w, n_w, rtol=1e-4, atol=1e-6)
    assert np.all(np.asarray(d_h)[~np.asarray(clean_mask)] == 0.0)


def test_fused_zero_token_batch():
    cfg = PolicyLossConfig(aggregation="token-mean")
    hidden, unemb, targets, old, adv, mask = _inputs(seed=14)
    out, (d_h, d_w) = _sum_and_grads(_fused(4), cfg, hidden, unemb, targets, old, adv,
                                     jnp.zeros_like(mask))
    assert float(out.loss_sum) == 0 and float(out.count) == 0
    assert np.all(np.asarray(d_h) == 0) and np.all(np.asarray(d_w) == 0)


def test_fused_rejects_bad_shapes():
    hidden, unemb, targets, old, adv, mask = _inputs()
    with pytest.raises(ValueError, match=r"\[B, T, d\]"):
        fused_policy_loss(hidden[0], unemb, targets[0], old, adv, mask, PolicyLossConfig())
    with pytest.raises(ValueError, match="old_logprobs"):
        fused_policy_loss(hidden, unemb, targets, old[:, :2], adv, mask, PolicyLossConfig())


def test_forward_only_call_equals_differentiated_value():
    cfg = PolicyLossConfig(aggregation="seq-mean-token-mean")
    batch = _inputs(seed=15)
    forward = jax.jit(lambda *a: fused_policy_loss(*a, cfg, chunk_size=4))(*batch)
    with_grad, _ = _sum_and_grads(_fused(4), cfg, *batch)
    np.testing.assert_allclose(forward.loss_sum, with_grad.loss_sum, rtol=1e-6)
    np.testing.assert_allclose(forward.diagnostics["logprobs"], with_grad.diagnostics["logprobs"],
                               rtol=1e-6)
