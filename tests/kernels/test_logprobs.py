"""Chunked token log-probs against a float64 NumPy reference (values) and the
naive full-logits JAX version under plain autodiff (gradients)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels import default_chunk_size, naive_token_logprobs, token_logprobs
from tests.kernels import numpy_reference as ref

N, D, V = 13, 8, 37  # N is prime: no chunk size > 1 below divides it


def _inputs(seed=0, dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(N, D)).astype(np.float32)
    unemb = (rng.normal(size=(D, V)) * 0.5).astype(np.float32)
    targets = rng.integers(0, V, size=(N,)).astype(np.int32)
    g_lp = rng.normal(size=(N,)).astype(np.float32)
    g_ent = rng.normal(size=(N,)).astype(np.float32)
    return (jnp.asarray(hidden, dtype), jnp.asarray(unemb, dtype), jnp.asarray(targets),
            jnp.asarray(g_lp), jnp.asarray(g_ent))


def _value_and_grads(fn, hidden, unemb, targets, g_lp, g_ent, temperature, **kw):
    def scalar(h, w):
        lp, ent = fn(h, w, targets, temperature=temperature, return_entropy=True, **kw)
        return jnp.sum(lp * g_lp) + jnp.sum(ent * g_ent), (lp, ent)
    (_, (lp, ent)), grads = jax.value_and_grad(scalar, argnums=(0, 1), has_aux=True)(
        hidden, unemb)
    return lp, ent, grads


@pytest.mark.parametrize("chunk_size, temperature", [
    (1, 1.0), (4, 0.7), (5, 1.0), (13, 0.7), (64, 1.0)])  # N = 13: 4 and 5 do not divide it
def test_chunked_matches_reference_values_and_naive_gradients(chunk_size, temperature):
    hidden, unemb, targets, g_lp, g_ent = _inputs()
    lp, ent, (d_h, d_w) = _value_and_grads(token_logprobs, hidden, unemb, targets, g_lp, g_ent,
                                           temperature, chunk_size=chunk_size)
    want_lp, want_ent = ref.logprobs_and_entropy(hidden, unemb, targets, temperature)
    np.testing.assert_allclose(lp, want_lp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ent, want_ent, rtol=1e-5, atol=1e-5)
    _, _, (nd_h, nd_w) = _value_and_grads(naive_token_logprobs, hidden, unemb, targets, g_lp,
                                          g_ent, temperature)
    np.testing.assert_allclose(d_h, nd_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(d_w, nd_w, rtol=1e-4, atol=1e-5)


def test_gradient_matches_finite_differences_of_numpy_reference():
    hidden, unemb, targets, g_lp, _ = _inputs(seed=1)
    grad_h = jax.grad(lambda h: jnp.sum(token_logprobs(h, unemb, targets, chunk_size=4) * g_lp))(
        hidden)
    weights = np.asarray(g_lp, np.float64)
    fn = lambda h: float(np.sum(ref.logprobs_and_entropy(h, unemb, targets)[0] * weights))
    # Finite differences over all hidden entries (13 x 8, float64).
    want = ref.finite_difference_grad(fn, np.asarray(hidden, np.float64))
    np.testing.assert_allclose(grad_h, want, rtol=1e-4, atol=1e-5)


def test_leading_batch_axes_are_kept():
    hidden, unemb, targets, _, _ = _inputs()
    lp = token_logprobs(hidden[:12].reshape(3, 4, D), unemb, targets[:12].reshape(3, 4),
                        chunk_size=5)
    assert lp.shape == (3, 4)
    np.testing.assert_allclose(lp.reshape(-1), ref.logprobs_and_entropy(
        hidden[:12], unemb, targets[:12])[0], rtol=1e-5, atol=1e-5)


def test_bf16_inputs_accumulate_in_fp32():
    hidden, unemb, targets, g_lp, g_ent = _inputs(seed=2, dtype=jnp.bfloat16)
    lp, ent, (d_h, d_w) = _value_and_grads(token_logprobs, hidden, unemb, targets, g_lp, g_ent,
                                           1.0, chunk_size=4)
    assert lp.dtype == jnp.float32 and d_h.dtype == jnp.bfloat16 and d_w.dtype == jnp.bfloat16
    # Reference on the bf16-rounded values in float64: only output rounding differs.
    want_lp, want_ent = ref.logprobs_and_entropy(np.asarray(hidden, np.float32),
                                                 np.asarray(unemb, np.float32), targets)
    np.testing.assert_allclose(lp, want_lp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ent, want_ent, rtol=1e-5, atol=1e-5)
    _, _, (nd_h, nd_w) = _value_and_grads(naive_token_logprobs, hidden.astype(jnp.float32),
                                          unemb.astype(jnp.float32), targets, g_lp, g_ent, 1.0)
    np.testing.assert_allclose(np.asarray(d_h, np.float32), nd_h, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(np.asarray(d_w, np.float32), nd_w, rtol=2e-2, atol=2e-2)


def test_zero_cotangent_rows_block_nan_hidden_states():
    hidden, unemb, targets, g_lp, _ = _inputs(seed=3)
    bad = hidden.at[2].set(jnp.nan).at[7].set(jnp.inf)
    targets = targets.at[7].set(-100)  # an ignore-index target
    weight = g_lp.at[2].set(0.0).at[7].set(0.0)
    def fn(h, w):
        lp = token_logprobs(h, w, targets, chunk_size=4)
        return jnp.sum(jnp.where(weight != 0, lp, 0.0) * weight)
    d_h, d_w = jax.grad(fn, argnums=(0, 1))(bad, unemb)
    clean_h, clean_w = jax.grad(fn, argnums=(0, 1))(hidden, unemb)
    assert np.isfinite(d_w).all()
    np.testing.assert_allclose(d_w, clean_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(d_h[2], 0.0)
    np.testing.assert_allclose(d_h, clean_h, rtol=1e-6, atol=1e-7)


def test_out_of_range_target_gives_nan_not_a_wrong_number():
    hidden, unemb, targets, _, _ = _inputs()
    lp = token_logprobs(hidden, unemb, targets.at[0].set(-100).at[1].set(V), chunk_size=4)
    assert np.isnan(lp[0]) and np.isnan(lp[1]) and np.isfinite(lp[2:]).all()


def test_jit_and_default_chunk_size():
    hidden, unemb, targets, _, _ = _inputs()
    lp = jax.jit(token_logprobs)(hidden, unemb, targets)
    np.testing.assert_allclose(lp, ref.logprobs_and_entropy(hidden, unemb, targets)[0],
                               rtol=1e-5, atol=1e-5)
    assert default_chunk_size(10**6, 151936) % 8 == 0
    assert default_chunk_size(10**6, 151936) * 151936 <= 2**26
    assert default_chunk_size(13, 37) == 16


@pytest.mark.parametrize("kwargs, match", [
    ({"temperature": 0.0}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"chunk_size": 0}, "chunk_size"),
])
def test_bad_arguments_raise(kwargs, match):
    hidden, unemb, targets, _, _ = _inputs()
    with pytest.raises(ValueError, match=match):
        token_logprobs(hidden, unemb, targets, **kwargs)


def test_bad_shapes_raise():
    hidden, unemb, targets, _, _ = _inputs()
    with pytest.raises(ValueError, match="last axis"):
        token_logprobs(hidden, unemb.T, targets)
    with pytest.raises(ValueError, match="leading shape"):
        token_logprobs(hidden, unemb, targets[:5])
    with pytest.raises(ValueError, match="integer"):
        token_logprobs(hidden, unemb, targets.astype(jnp.float32))
