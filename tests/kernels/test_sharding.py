"""The fused loss on 8 fake CPU devices (batch axis sharded) equals the
single-device value, both under jit's automatic partitioning and as
per-shard (sum, count) pairs added up with psum."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from kernels import (PolicyLossConfig, fused_policy_loss, loss_from_sum_count,
                     naive_token_logprobs, policy_loss, token_logprobs)

B, T, D, V = 8, 4, 8, 23


@pytest.fixture(scope="module")
def mesh():
    devices = jax.devices()
    if len(devices) < 8:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=8 (tests/conftest.py)")
    return Mesh(np.array(devices[:8]), ("data",))


def _batch():
    rng = np.random.default_rng(0)
    hidden = jnp.asarray(rng.normal(size=(B, T, D)), jnp.float32)
    unemb = jnp.asarray(rng.normal(size=(D, V)) * 0.5, jnp.float32)
    targets = jnp.asarray(rng.integers(0, V, size=(B, T)), jnp.int32)
    old = jnp.asarray(-rng.uniform(1.0, 4.0, size=(B, T)), jnp.float32)
    adv = jnp.asarray(rng.normal(size=(B,)), jnp.float32)
    lengths = rng.integers(0, T + 1, size=(B,))
    lengths[3] = 0  # one shard holds a sequence without tokens
    mask = jnp.asarray(np.arange(T)[None, :] < lengths[:, None])
    return hidden, unemb, targets, old, adv, mask


CFG = PolicyLossConfig(loss_type="cispo", aggregation="seq-mean-token-mean")


def _loss_and_grads(hidden, unemb, targets, old, adv, mask):
    def value(h, w):
        out = fused_policy_loss(h, w, targets, old, adv, mask, CFG, chunk_size=3)
        return loss_from_sum_count(out.loss_sum, out.count), out.count
    return jax.value_and_grad(value, argnums=(0, 1), has_aux=True)(hidden, unemb)


def test_jit_with_batch_sharding_equals_single_device(mesh):
    batch = _batch()
    (want_loss, want_count), (want_dh, want_dw) = jax.jit(_loss_and_grads)(*batch)
    data = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())
    shardings = (data, replicated, data, data, data, data)
    placed = [jax.device_put(x, s) for x, s in zip(batch, shardings)]
    assert len(placed[0].sharding.device_set) == 8
    (loss, count), (dh, dw) = jax.jit(_loss_and_grads)(*placed)
    assert float(count) == float(want_count)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
    np.testing.assert_allclose(dh, want_dh, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-5, atol=1e-7)


def test_per_shard_sums_and_counts_psum_to_full_batch(mesh):
    """Inside shard_map each device evaluates its own sequences; psum of the
    pieces' (sum, count) is the full batch. The gradient w.r.t. the replicated
    unembedding is the all-shard total, as plain autodiff gives it."""
    hidden, unemb, targets, old, adv, mask = _batch()

    def per_shard(h, w, t, o, a, m):
        def piece(h, w):
            out = fused_policy_loss(h, w, t, o, a, m, CFG, chunk_size=3)
            return out.loss_sum, out.count
        (s, c), (d_h, d_w) = jax.value_and_grad(piece, argnums=(0, 1), has_aux=True)(h, w)
        naive_d_w = jax.grad(lambda w_: policy_loss(
            naive_token_logprobs(h, w_, t), o, a, m, CFG).loss_sum)(w)
        return jax.lax.psum(s, "data"), jax.lax.psum(c, "data"), d_h, d_w, naive_d_w

    sharded = jax.jit(jax.shard_map(
        per_shard, mesh=mesh,
        in_specs=(P("data"), P(), P("data"), P("data"), P("data"), P("data")),
        out_specs=(P(), P(), P("data"), P(), P())))
    total_sum, total_count, d_h, d_w, naive_d_w = sharded(hidden, unemb, targets, old, adv, mask)

    def full(h, w):
        out = fused_policy_loss(h, w, targets, old, adv, mask, CFG)
        return out.loss_sum, out.count
    (want_sum, want_count), (want_dh, want_dw) = jax.jit(jax.value_and_grad(
        full, argnums=(0, 1), has_aux=True))(hidden, unemb)
    assert float(total_count) == float(want_count)
    np.testing.assert_allclose(total_sum, want_sum, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(d_h, want_dh, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(d_w, want_dw, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(naive_d_w, want_dw, rtol=1e-5, atol=1e-7)


def test_token_logprobs_gradient_inside_shard_map(mesh):
    hidden, unemb, targets, _, _, _ = _batch()
    weights = jnp.asarray(np.random.default_rng(1).normal(size=(B, T)), jnp.float32)

    def grads(h, w, t, g, fn):
        return jax.grad(lambda h, w: jnp.sum(fn(h, w, t) * g), argnums=(0, 1))(h, w)

    specs = (P("data"), P(), P("data"), P("data"))
    chunked = lambda h, w, t: token_logprobs(h, w, t, chunk_size=3)
    got = jax.jit(jax.shard_map(lambda *a: grads(*a, chunked), mesh=mesh, in_specs=specs,
                                out_specs=(P("data"), P())))(hidden, unemb, targets, weights)
    want = grads(hidden, unemb, targets, weights, naive_token_logprobs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
