"""(sum, count) aggregation: each mode against the NumPy reference, and
micro-batch sums equal to the full batch (values and gradients)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels import (AGGREGATION_MODES, PolicyLossConfig, aggregate, aggregation_weights,
                     loss_from_sum_count, policy_loss)
from tests.kernels import numpy_reference as ref

NORM = {"seq-mean-token-sum-norm": 5.0}


def _data(seed=0, b=7, t=5):
    rng = np.random.default_rng(seed)
    per_token = rng.normal(size=(b, t))
    mask = rng.uniform(size=(b, t)) > 0.35
    mask[2] = False
    return per_token, mask


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_aggregate_matches_reference(mode):
    per_token, mask = _data()
    per_token_nan = np.where(mask, per_token, np.nan)  # masked positions must not matter
    s, c = aggregate(jnp.asarray(per_token_nan), jnp.asarray(mask), mode, NORM.get(mode))
    np.testing.assert_allclose(loss_from_sum_count(s, c),
                               ref.aggregate(per_token, mask, mode, NORM.get(mode)), rtol=1e-6)
    expected_count = mask.sum() if mode == "token-mean" else mask.any(axis=1).sum()
    assert float(c) == expected_count


def test_weights_are_zero_off_mask_and_count_empty_batch_is_zero():
    _, mask = _data()
    w, _ = aggregation_weights(jnp.asarray(mask), "seq-mean-token-mean")
    assert np.all(np.asarray(w)[~mask] == 0)
    np.testing.assert_allclose(np.asarray(w).sum(axis=1), mask.any(axis=1).astype(float))
    s, c = aggregate(jnp.ones((3, 4)), jnp.zeros((3, 4)), "seq-mean-token-mean")
    assert float(s) == 0 and float(c) == 0 and float(loss_from_sum_count(s, c)) == 0


def test_aggregate_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        aggregate(jnp.ones((3, 4)), jnp.ones((3, 5)), "token-mean")
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(jnp.ones((3, 4)), jnp.ones((3, 4)), "sum")


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@pytest.mark.parametrize("loss_type", ["ppo_clip", "cispo"])
def test_micro_batch_sums_equal_full_batch(mode, loss_type):
    rng = np.random.default_rng(1)
    b, t = 7, 5
    lp = jnp.asarray(-rng.uniform(0.1, 2.0, size=(b, t)), jnp.float32)
    old = lp + jnp.asarray(rng.normal(scale=0.3, size=(b, t)), jnp.float32)
    adv = jnp.asarray(rng.normal(size=(b,)), jnp.float32)
    mask = jnp.asarray(_data(2, b, t)[1])
    cfg = PolicyLossConfig(loss_type=loss_type, aggregation=mode, norm_constant=NORM.get(mode))

    def sum_and_count(x, lo, hi):
        out = policy_loss(x[lo:hi], old[lo:hi], adv[lo:hi], mask[lo:hi], cfg)
        return out.loss_sum, out.count

    # Uneven micro-batches, one of them holding only the empty sequence (row 2).
    bounds = [(0, 2), (2, 3), (3, 6), (6, 7)]

    @jax.jit
    def full_and_pieces(x):
        full = sum_and_count(x, 0, b)
        full_grad = jax.grad(lambda y: sum_and_count(y, 0, b)[0])(x)
        pieces = [sum_and_count(x, lo, hi) for lo, hi in bounds]
        grads = sum(jax.grad(lambda y, lo=lo, hi=hi: sum_and_count(y, lo, hi)[0])(x)
                    for lo, hi in bounds)
        return full, full_grad, pieces, grads

    (full_sum, full_count), full_grad, pieces, grads = full_and_pieces(lp)
    sums, counts = zip(*pieces)
    assert float(sum(counts)) == float(full_count)
    np.testing.assert_allclose(sum(sums), full_sum, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads, full_grad, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(float(sum(sums)) / float(sum(counts)),
                               ref.loss(lp, old, adv, mask, cfg), rtol=1e-5)
