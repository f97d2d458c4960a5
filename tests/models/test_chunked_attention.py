"""Query-chunked attention (DecoderConfig.attention_chunk) gives the model's
outputs and gradients of whole attention, with padding and a length that
the chunk does not divide, and holds less memory in a compiled step."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from models.config import tiny_config
from models.decoder import Decoder, attend, chunked_attention


def test_chunks_equal_whole_attention_by_hand_sizes():
    rng = np.random.default_rng(0)
    b, t, s, kv, g, d = 2, 13, 13, 2, 2, 8
    q = jnp.asarray(rng.normal(size=(b, t, kv, g, d)), jnp.float32)
    k = jnp.asarray(rng.normal(size=(b, s, kv, d)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(b, s, kv, d)), jnp.float32)
    mask = jnp.asarray(np.tril(np.ones((t, s), bool))[None] & (rng.random((b, 1, s)) > 0.2))
    whole = attend(q, k, v, mask, d ** -0.5)
    for chunk in (1, 4, 5, 13):
        np.testing.assert_allclose(chunked_attention(q, k, v, mask, d ** -0.5, chunk), whole,
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("chunk", [4, 7])
def test_a_chunked_model_has_the_same_logits_and_gradients(chunk):
    cfg = tiny_config("qwen3", vocab_size=64, remat=True)
    model = Decoder(cfg, nnx.Rngs(0))
    chunked = Decoder(dataclasses.replace(cfg, attention_chunk=chunk), nnx.Rngs(0))
    tokens = jnp.asarray(np.random.default_rng(1).integers(0, 64, (2, 18)), jnp.int32)
    input_mask = jnp.ones((2, 18), bool).at[0, :5].set(False)  # a left-padded row

    def loss(m):
        logits, _ = m(tokens, input_mask=input_mask)
        return jnp.where(input_mask[..., None], jax.nn.log_softmax(logits), 0.0).sum(), logits

    (l1, logits1), g1 = nnx.value_and_grad(loss, has_aux=True)(model)
    (l2, logits2), g2 = nnx.value_and_grad(loss, has_aux=True)(chunked)
    np.testing.assert_allclose(logits2, logits1, rtol=1e-5, atol=1e-5)
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_chunks_shrink_a_compiled_steps_working_memory():
    def temp(chunk):
        cfg = tiny_config("qwen3", vocab_size=64, hidden_size=32, num_heads=8, num_kv_heads=8,
                          head_dim=4, remat=True, attention_chunk=chunk)
        graphdef, params = nnx.split(nnx.eval_shape(lambda: Decoder(cfg, nnx.Rngs(0))))
        tokens = jax.ShapeDtypeStruct((1, 1024), jnp.int32)

        def step(p, x):
            logits, _ = nnx.merge(graphdef, p)(x)
            return logits.mean()

        return jax.jit(jax.grad(step)).lower(params, tokens).compile().memory_analysis() \
            .temp_size_in_bytes
    whole, chunked = temp(0), temp(128)
    assert chunked < whole / 3, (chunked, whole)  # [8 heads, 1024, 1024] f32 scores: 32 MB a layer


def test_causal_query_blocks_equal_whole_attention(monkeypatch):
    """Causal attention within a block, in query blocks that skip the keys
    after their end: the values and gradients of whole attention, with
    padded keys and block sizes that do not divide the length."""
    from models import decoder
    rng = np.random.default_rng(2)
    b, t, kv, g, d = 2, 13, 2, 2, 8
    q = jnp.asarray(rng.normal(size=(b, t, kv, g, d)), jnp.float32)
    k = jnp.asarray(rng.normal(size=(b, t, kv, d)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(b, t, kv, d)), jnp.float32)
    mask = jnp.asarray(np.tril(np.ones((t, t), bool))[None] & (rng.random((b, 1, t)) > 0.2))
    # A query whose mask allows no key (padding) gets a meaningless average
    # either way, over different keys; only queries that attend count.
    live = mask.any(-1)[:, :, None, None, None]
    assert not bool(live.all())  # the case is exercised

    def loss(fn):
        return lambda q, k, v: (jnp.where(live, fn(q, k, v, mask, 0.3), 0.0) ** 2).sum()
    # jitted: op by op, the blocks' many small operations took 40 s
    want, want_grads = jax.jit(jax.value_and_grad(loss(attend), argnums=(0, 1, 2)))(q, k, v)
    for block in (2, 5):  # several blocks, a last one cut short
        monkeypatch.setattr(decoder, "MIN_CAUSAL_BLOCK", block)  # read when traced
        got, grads = jax.jit(jax.value_and_grad(loss(decoder.causal_block_attention),
                                                argnums=(0, 1, 2)))(q, k, v)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        for a, w in zip(grads, want_grads):
            np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)


def test_a_model_in_causal_blocks_has_the_same_logits_gradients_and_samples(monkeypatch):
    from models import decoder
    from models.sampler import Sampler
    from models.sampling_ops import SamplingConfig
    cfg = tiny_config("qwen3", vocab_size=64)
    graphdef, params = nnx.split(Decoder(cfg, nnx.Rngs(0)))
    tokens = jnp.asarray(np.random.default_rng(1).integers(0, 64, (2, 18)), jnp.int32)
    input_mask = jnp.ones((2, 18), bool).at[0, :5].set(False)  # a left-padded row

    def loss(p):
        logits, _ = nnx.merge(graphdef, p)(tokens, input_mask=input_mask)
        return jnp.where(input_mask[..., None], jax.nn.log_softmax(logits), 0.0).sum(), logits

    def run(block):  # traced anew under each block size
        monkeypatch.setattr(decoder, "MIN_CAUSAL_BLOCK", block)
        (_, logits), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
        sampler = Sampler(nnx.merge(graphdef, params), prompt_bucket=16, cache_bucket=16)
        out = sampler.generate([[5, 9, 2, 33, 17, 8, 8, 1, 40, 3, 4, 11, 12, 13], [7, 7]],
                               SamplingConfig(temperature=0.0, max_new_tokens=6))
        return logits, grads, out
    whole_logits, whole_grads, whole_out = run(1000)  # one block: plain attention
    logits, grads, out = run(3)  # 6 query blocks (the cap is 8)
    real = np.asarray(input_mask)  # padding positions attend to nothing: their logits are noise
    np.testing.assert_allclose(logits[real], whole_logits[real], rtol=1e-5, atol=1e-5)
    for a, w in zip(jax.tree.leaves(grads), jax.tree.leaves(whole_grads)):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-5)
    assert out.tokens == whole_out.tokens
    for a, w in zip(out.logprobs, whole_out.logprobs):
        np.testing.assert_allclose(a, w, atol=1e-5)
