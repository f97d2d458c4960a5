"""Decoder-only LM (Llama 3.x, Qwen2/2.5, Qwen3) as Flax NNX modules.

One forward serves training (no cache, mask built from the padding mask),
prefill and decoding (a KV cache written at a shared slot offset, with a
[B, T, S] mask the sampler builds). Positions are per row, so a left-padded
row gives the same result as the row alone.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from models.config import DecoderConfig
from models.layers import Embed, Linear, RMSNorm, apply_rope, rope_inverse_frequencies
from models.sharding import constrain

_NEG = -1e30  # added to masked scores; finite so fully masked rows stay NaN-free


class KVCache(NamedTuple):
    """Keys [batch, kv_heads, head_dim, slots] and values [batch, kv_heads,
    slots, head_dim] of every layer: one stacked [layers, ...] array each
    with scan_layers, else one array per layer. Keys keep the slots last, so
    a decoded token's scores sum rows that run along the slots (vectorised;
    with head_dim last, XLA's CPU backend summed 32-element rows one output
    at a time: docs/BENCHMARKS.md "Sampler"). Unrolled layers keep separate arrays: XLA's
    CPU backend copied a layer out of a stacked, loop-carried cache at every
    decode step (seen in its optimised HLO), costing more than its matmuls."""

    k: jax.Array | tuple
    v: jax.Array | tuple

    @staticmethod
    def zeros(cfg: DecoderConfig, batch: int, slots: int) -> "KVCache":
        keys = (batch, cfg.num_kv_heads, cfg.head_dim, slots)
        values = (batch, cfg.num_kv_heads, slots, cfg.head_dim)
        if cfg.scan_layers:
            return KVCache(jnp.zeros((cfg.num_layers, *keys), cfg.jnp_dtype),
                           jnp.zeros((cfg.num_layers, *values), cfg.jnp_dtype))
        return KVCache(*(tuple(jnp.zeros(shape, cfg.jnp_dtype) for _ in range(cfg.num_layers))
                         for shape in (keys, values)))

    @property
    def stacked(self) -> bool:
        return not isinstance(self.k, (tuple, list))

    @property
    def slots(self) -> int:
        return (self.v if self.stacked else self.v[0]).shape[-2]

    @property
    def rows(self) -> int:
        return (self.v if self.stacked else self.v[0]).shape[-4]


def causal_mask(input_mask: jax.Array) -> jax.Array:
    """[B, T] validity -> [B, T, T] attention mask: causal and valid keys only."""
    t = input_mask.shape[1]
    causal = jnp.tril(jnp.ones((t, t), bool))
    return causal[None] & input_mask[:, None, :].astype(bool)


def positions_from_mask(input_mask: jax.Array, start: jax.Array | int = 0) -> jax.Array:
    """Per-row positions that skip padding: the i-th valid token gets start + i."""
    m = input_mask.astype(jnp.int32)
    return jnp.maximum(jnp.cumsum(m, axis=1) - 1, 0) + jnp.asarray(start, jnp.int32)[..., None]


class Attention(nnx.Module):
    def __init__(self, cfg: DecoderConfig, rngs: nnx.Rngs):
        d, hd = cfg.hidden_size, cfg.head_dim
        kw = dict(rngs=rngs, param_dtype=cfg.jnp_param_dtype, dtype=cfg.jnp_dtype)
        self.q_proj = Linear(d, cfg.num_heads * hd, axes=("embed", "heads"), bias=cfg.qkv_bias, **kw)
        self.k_proj = Linear(d, cfg.num_kv_heads * hd, axes=("embed", "kv_heads"),
                             bias=cfg.qkv_bias, **kw)
        self.v_proj = Linear(d, cfg.num_kv_heads * hd, axes=("embed", "kv_heads"),
                             bias=cfg.qkv_bias, **kw)
        self.o_proj = Linear(cfg.num_heads * hd, d, axes=("heads", "embed"), bias=cfg.o_bias, **kw)
        if cfg.qk_norm:
            norm_kw = dict(eps=cfg.rms_norm_eps, param_dtype=cfg.jnp_param_dtype, axes=("head_dim",))
            self.q_norm = RMSNorm(hd, **norm_kw)
            self.k_norm = RMSNorm(hd, **norm_kw)
        else:
            self.q_norm = self.k_norm = None
        self.cfg = cfg

    def __call__(self, x, positions, mask, inv_freq, k_cache=None, v_cache=None, offset=None,
                 causal=False):
        """(output, k, v): with unrolled layers' cache arrays, k and v are
        those arrays with this block written at ``offset``; with a slice of
        a stacked cache (scan_layers), the block itself [b, kv, t, d], for
        the caller to write; without a cache, None."""
        cfg = self.cfg
        b, t, _ = x.shape
        q, k, v = self._project(x, positions, inv_freq)
        scale = cfg.head_dim ** -0.5
        stored = (None, None)  # what the caller keeps in its cache for this layer
        out = None
        # A mask over the cache's slots attends over the cache; one over the
        # block's own t positions, within the block (see Decoder.hidden_states).
        over_cache = k_cache is not None and mask.shape[-1] == v_cache.shape[2]
        if k_cache is not None:  # the block in the cache's layouts (KVCache)
            k_new = k.astype(k_cache.dtype).transpose(0, 2, 3, 1)  # [b, kv, d, t]
            v_new = v.astype(v_cache.dtype).transpose(0, 2, 1, 3)  # [b, kv, t, d]
        if k_cache is not None and not cfg.scan_layers:
            # Unrolled layers: this layer's own cache arrays, written in place
            # here first, then read. Reading a cache array before an in-place
            # write of it made XLA's CPU backend copy every cache array twice
            # per decode step; written first, the cache is never copied
            # (tests/models/test_sampler.py checks the compiled decode loop).
            k_cache = jax.lax.dynamic_update_slice_in_dim(k_cache, k_new, offset, 3)
            v_cache = jax.lax.dynamic_update_slice_in_dim(v_cache, v_new, offset, 2)
            stored = (k_cache, v_cache)
            if over_cache and t == 1:
                out = attend_cached_token(q, k_cache.astype(q.dtype), v_cache.astype(q.dtype),
                                          mask, scale)
            elif over_cache:
                k, v = k_cache.transpose(0, 3, 1, 2), v_cache.transpose(0, 2, 1, 3)
        elif k_cache is not None:
            # Scanned layers: the layer's cache is a slice of the stacked
            # arrays and the caller writes every layer's block at once after
            # the scan, so here the block only joins the attention.
            stored = (k_new, v_new)
            if over_cache and t == 1:  # the cache as it stands plus the token, no copy
                out = attend_one_token(q, k_cache.astype(q.dtype), v_cache.astype(q.dtype),
                                       k_new.astype(q.dtype), v_new.astype(q.dtype), mask,
                                       offset, scale)
            elif over_cache:  # a prompt block: a copy of the cache with it written in
                k = jax.lax.dynamic_update_slice_in_dim(k_cache, k_new, offset, 3)
                v = jax.lax.dynamic_update_slice_in_dim(v_cache, v_new, offset, 2)
                k, v = k.transpose(0, 3, 1, 2), v.transpose(0, 2, 1, 3)
        if out is None:
            k, v = k.astype(q.dtype), v.astype(q.dtype)
            if cfg.attention_chunk and t > cfg.attention_chunk:
                out = chunked_attention(q, k, v, mask, scale, cfg.attention_chunk)
            elif causal and not over_cache:
                out = causal_block_attention(q, k, v, mask, scale)
            else:
                out = attend(q, k, v, mask, scale)
        out = out.reshape(b, t, cfg.num_heads * cfg.head_dim)
        return self.o_proj(constrain(out, ("batch", "seq", "act_heads"))), *stored

    def _project(self, x, positions, inv_freq):
        """The block's queries [b, t, kv, g, d] (grouped by the key/value head
        they read), keys and values [b, t, kv, d]: projected, normed
        (qk_norm) and rotated."""
        cfg = self.cfg
        b, t, _ = x.shape
        q = self.q_proj(x).reshape(b, t, cfg.num_heads, cfg.head_dim)
        k = self.k_proj(x).reshape(b, t, cfg.num_kv_heads, cfg.head_dim)
        v = self.v_proj(x).reshape(b, t, cfg.num_kv_heads, cfg.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q, positions, inv_freq)
        k = apply_rope(k, positions, inv_freq)
        groups = cfg.num_heads // cfg.num_kv_heads
        return q.reshape(b, t, cfg.num_kv_heads, groups, cfg.head_dim), k, v


def attend(q, k, v, mask, scale):
    """Softmax attention of q [b, t, kv, g, d] over k, v [b, s, kv, d] where
    mask [b, t, s] allows; scores and softmax in float32."""
    scores = jnp.einsum("btkgd,bskd->bkgts", q, k).astype(jnp.float32) * scale
    scores = jnp.where(mask[:, None, None, :, :], scores, _NEG)
    probs = jax.nn.softmax(scores, axis=-1).astype(q.dtype)
    return jnp.einsum("bkgts,bskd->btkgd", probs, v)


# Causal attention within a block is computed in query blocks of at least
# MIN_CAUSAL_BLOCK tokens and at most CAUSAL_QUERY_BLOCKS blocks (a bounded
# unrolled program), each over the keys up to its own end only.
MIN_CAUSAL_BLOCK, CAUSAL_QUERY_BLOCKS = 64, 8


def causal_block_attention(q, k, v, mask, scale):
    """`attend` of a block over its own positions (k, v [b, t, kv, d]) where
    ``mask`` [b, t, t] lets no query attend to a later position: query block
    j reads only the keys up to its end, so the scores above the diagonal
    blocks are never computed. The same result as `attend` up to float
    summation order (the skipped scores are masked there, exp(-1e30) = 0),
    except for a query whose mask allows no key at all (left padding): its
    meaningless output averages other values. On CPU, smaller score arrays
    are also faster per element (docs/BENCHMARKS.md "Sampler")."""
    t = q.shape[1]
    chunk = max(MIN_CAUSAL_BLOCK, -(-t // CAUSAL_QUERY_BLOCKS))
    if t <= chunk:
        return attend(q, k, v, mask, scale)
    outs = [attend(q[:, s:s + chunk], k[:, :s + chunk], v[:, :s + chunk],
                   mask[:, s:s + chunk, :s + chunk], scale) for s in range(0, t, chunk)]
    return jnp.concatenate(outs, axis=1)


def attend_cached_token(q, k_cache, v_cache, mask, scale):
    """`attend` for one query [b, 1, kv, g, d] over a cache that already
    holds its own key and value (keys [b, kv, d, s], values [b, kv, s, d]),
    where ``mask`` [b, 1, s] allows."""
    # Products and sums, not einsums: a matrix-vector product per (row, head)
    # is memory-bound either way, and on XLA's CPU backend these fused loops
    # beat its batched dots of the same shapes (docs/BENCHMARKS.md "Sampler").
    qh = q[:, 0]  # [b, kv, g, d]
    scores = (qh[..., None] * k_cache[:, :, None]).astype(jnp.float32).sum(-2) * scale
    scores = jnp.where(mask[:, :, None, :], scores, _NEG)  # [b, kv, g, s]
    probs = jax.nn.softmax(scores, axis=-1).astype(q.dtype)
    return (probs[..., None] * v_cache[:, :, None]).sum(-2)[:, None]  # [b, 1, kv, g, d]


def attend_one_token(q, k_cache, v_cache, k_new, v_new, mask, offset, scale):
    """`attend` for one query [b, 1, kv, g, d] over the cache's slots
    (keys [b, kv, d, s], values [b, kv, s, d]) that ``mask`` [b, 1, s]
    allows before ``offset``, and over its own key [b, kv, d, 1] and value
    [b, kv, 1, d] (allowed where ``mask`` allows slot ``offset``): the same
    result as writing the token into the cache first."""
    slots = v_cache.shape[2]
    own = jax.lax.dynamic_index_in_dim(mask, offset, axis=2, keepdims=True)  # [b, 1, 1]
    before = mask & (jnp.arange(slots) < offset)[None, None, :]
    # Products and sums, not einsums: a matrix-vector product per (row, head)
    # is memory-bound either way, and on XLA's CPU backend these fused loops
    # beat its batched dots of the same shapes (the whole sampler 1.1-1.4x
    # in an interleaved A/B at batch 8-64; measured on CPU only,
    # GPU and TPU take the same code).
    qh = q[:, 0]  # [b, kv, g, d]
    scores = (qh[..., None] * k_cache[:, :, None]).astype(jnp.float32).sum(-2) * scale
    scores = jnp.where(before[:, :, None, :], scores, _NEG)  # [b, kv, g, s]
    self_score = (qh * k_new[..., 0][:, :, None]).astype(jnp.float32).sum(-1) * scale
    self_score = jnp.where(own[:, :, None, 0], self_score, _NEG)[..., None]  # [b, kv, g, 1]
    probs = jax.nn.softmax(jnp.concatenate([scores, self_score], axis=-1), axis=-1).astype(q.dtype)
    out = ((probs[..., :slots, None] * v_cache[:, :, None]).sum(-2)
           + probs[..., slots:] * v_new[:, :, 0][:, :, None])  # [b, kv, g, d]
    return out[:, None]


def chunked_attention(q, k, v, mask, scale, chunk: int):
    """`attend`, ``chunk`` queries at a time: the same result, with the
    scores of one chunk alive at once. Each chunk is rematerialised in the
    backward pass (jax.checkpoint), so training keeps no chunk's scores."""
    b, t = q.shape[:2]
    n = -(-t // chunk)
    pad = n * chunk - t
    if pad:  # padded queries attend to nothing real and are cut off below
        q = jnp.pad(q, ((0, 0), (0, pad)) + ((0, 0),) * (q.ndim - 2))
        mask = jnp.pad(mask, ((0, 0), (0, pad), (0, 0)))
    qs = jnp.moveaxis(q.reshape(b, n, chunk, *q.shape[2:]), 1, 0)
    ms = jnp.moveaxis(mask.reshape(b, n, chunk, mask.shape[-1]), 1, 0)
    one = jax.checkpoint(lambda qc, mc: attend(qc, k, v, mc, scale))
    out = jax.lax.map(lambda xs: one(*xs), (qs, ms))  # [n, b, chunk, kv, g, d]
    return jnp.moveaxis(out, 0, 1).reshape(b, n * chunk, *q.shape[2:])[:, :t]


class MLP(nnx.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: DecoderConfig, rngs: nnx.Rngs):
        d, f = cfg.hidden_size, cfg.intermediate_size
        kw = dict(rngs=rngs, param_dtype=cfg.jnp_param_dtype, dtype=cfg.jnp_dtype, bias=cfg.mlp_bias)
        self.gate_proj = Linear(d, f, axes=("embed", "mlp"), **kw)
        self.up_proj = Linear(d, f, axes=("embed", "mlp"), **kw)
        self.down_proj = Linear(f, d, axes=("mlp", "embed"), **kw)

    def __call__(self, x):
        h = jax.nn.silu(self.gate_proj(x)) * self.up_proj(x)
        return self.down_proj(constrain(h, ("batch", "seq", "act_mlp")))


class DecoderLayer(nnx.Module):
    def __init__(self, cfg: DecoderConfig, rngs: nnx.Rngs):
        norm_kw = dict(eps=cfg.rms_norm_eps, param_dtype=cfg.jnp_param_dtype)
        self.input_norm = RMSNorm(cfg.hidden_size, **norm_kw)
        self.attn = Attention(cfg, rngs)
        self.post_attn_norm = RMSNorm(cfg.hidden_size, **norm_kw)
        self.mlp = MLP(cfg, rngs)

    def __call__(self, x, positions, mask, inv_freq, k_cache=None, v_cache=None, offset=None,
                 causal=False):
        h, k_cache, v_cache = self.attn(self.input_norm(x), positions, mask, inv_freq,
                                        k_cache, v_cache, offset, causal)
        x = x + h
        x = x + self.mlp(self.post_attn_norm(x))
        return constrain(x, ("batch", "seq", "act_embed")), k_cache, v_cache


class Decoder(nnx.Module):
    """The language model. ``__call__`` returns logits; ``hidden_states`` and
    ``unembedding`` feed the fused log-prob kernel without [N, V] logits."""

    def __init__(self, cfg: DecoderConfig, rngs: nnx.Rngs):
        self.cfg = cfg
        self.embed = Embed(cfg.vocab_size, cfg.hidden_size, rngs=rngs,
                           param_dtype=cfg.jnp_param_dtype, dtype=cfg.jnp_dtype)
        if cfg.scan_layers:
            @nnx.split_rngs(splits=cfg.num_layers)
            @nnx.vmap(in_axes=(0,), out_axes=0)
            def make_layers(r):
                return DecoderLayer(cfg, r)
            self.layers = make_layers(rngs)
        else:
            self.layers = nnx.List([DecoderLayer(cfg, rngs) for _ in range(cfg.num_layers)])
        self.final_norm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps,
                                  param_dtype=cfg.jnp_param_dtype)
        self.lm_head = None if cfg.tie_embeddings else Linear(
            cfg.hidden_size, cfg.vocab_size, axes=("embed", "vocab"), bias=False, rngs=rngs,
            param_dtype=cfg.jnp_param_dtype, dtype=cfg.jnp_dtype)

    def unembedding(self) -> jax.Array:
        """The [d, V] output matrix (the embedding's transpose when tied)."""
        if self.lm_head is None:
            return self.embed.embedding[...].T
        return self.lm_head.kernel[...]

    def hidden_states(self, tokens, positions=None, mask=None, cache: KVCache | None = None,
                      offset=None, input_mask=None, last_only: bool = False,
                      causal: bool | None = None):
        """Final-norm hidden states [B, T, d] (and the updated cache); with
        ``last_only``, those of the last position alone [B, 1, d] (a sampler
        needs no other: the norm is not run over a whole prompt block).

        Without a cache, pass ``input_mask`` [B, T] (1 = real token) and the
        causal mask and positions are derived from it. With a cache, pass
        ``positions`` [B, T], the slot ``offset`` and ``mask``: [B, T, slots]
        attends over the cache with the block written in; [B, T, T] attends
        within the block alone (a fresh cache, whose other slots are empty),
        the block still being written into the cache.

        ``causal``: the mask lets no position of the block attend to a later
        one, so attention within the block skips those scores
        (`causal_block_attention`); None means true exactly when the mask
        is made here (no cache, no mask given).
        """
        cfg = self.cfg
        if causal is None:
            causal = cache is None and mask is None
        if cache is None:
            if input_mask is None:
                input_mask = jnp.ones(tokens.shape, bool)
            mask = causal_mask(input_mask) if mask is None else mask
            positions = positions_from_mask(input_mask) if positions is None else positions
        elif positions is None or mask is None or offset is None:
            raise ValueError("with a cache, positions, mask and offset are required")
        inv_freq = rope_inverse_frequencies(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
        x = constrain(self.embed(tokens), ("batch", "seq", "act_embed"))
        x, new_cache = self._run_layers(x, positions, mask, inv_freq, cache, offset, causal)
        return self.final_norm(x[:, -1:] if last_only else x), new_cache

    def _run_layers(self, x, positions, mask, inv_freq, cache, offset, causal):
        cfg = self.cfg

        def layer_fn(graphdef, state, h, kc, vc):
            return nnx.merge(graphdef, state)(h, positions, mask, inv_freq, kc, vc, offset, causal)

        if cfg.remat:  # recompute each layer's activations in the backward pass
            layer_fn = jax.checkpoint(layer_fn, static_argnums=(0,))
        if cfg.scan_layers:
            graphdef, layer_state = nnx.split(self.layers)
            if cache is None:
                def body(h, st):
                    return layer_fn(graphdef, st, h, None, None)[0], None
                x, _ = jax.lax.scan(body, x, layer_state)
                return x, None

            def body_cached(h, xs):
                st, kc, vc = xs
                h, k_new, v_new = layer_fn(graphdef, st, h, kc, vc)
                return h, (k_new, v_new)
            x, (k_new, v_new) = jax.lax.scan(body_cached, x, (layer_state, cache.k, cache.v))
            return x, _write_block(cache, k_new, v_new, offset)
        ks, vs = [], []
        for i, layer in enumerate(self.layers):
            graphdef, state = nnx.split(layer)
            kc = None if cache is None else cache.k[i]
            vc = None if cache is None else cache.v[i]
            x, k_written, v_written = layer_fn(graphdef, state, x, kc, vc)
            ks.append(k_written)
            vs.append(v_written)
        return x, (None if cache is None else KVCache(tuple(ks), tuple(vs)))

    def __call__(self, tokens, positions=None, mask=None, cache=None, offset=None,
                 input_mask=None):
        """Logits [B, T, V] in fp32 (and the updated cache, None without one)."""
        h, new_cache = self.hidden_states(tokens, positions, mask, cache, offset, input_mask)
        logits = jnp.dot(h, self.unembedding().astype(h.dtype), preferred_element_type=jnp.float32)
        return constrain(logits, ("batch", "seq", "act_vocab")), new_cache


def _write_block(cache: KVCache, k_new, v_new, offset) -> KVCache:
    """The stacked cache with every layer's new block (keys [L, B, kv, d, t],
    values [L, B, kv, t, d]) written at slot ``offset``: one in-place update
    of each stacked array."""
    return KVCache(jax.lax.dynamic_update_slice(cache.k, k_new, (0, 0, 0, 0, offset)),
                   jax.lax.dynamic_update_slice(cache.v, v_new, (0, 0, 0, offset, 0)))


def init_decoder(cfg: DecoderConfig, seed: int = 0, mesh=None, rules=None) -> Decoder:
    """A randomly initialised decoder; with a mesh, each parameter is created
    directly on its rule-given sharding (never whole on one device)."""
    if mesh is None:
        return Decoder(cfg, nnx.Rngs(seed))
    from models.sharding import DEFAULT_RULES, state_shardings
    abstract = nnx.eval_shape(lambda: Decoder(cfg, nnx.Rngs(seed)))
    graphdef, abstract_state = nnx.split(abstract)
    shardings = state_shardings(abstract_state, mesh, rules or DEFAULT_RULES)

    @functools.partial(jax.jit, out_shardings=shardings)
    def make_state():
        return nnx.split(Decoder(cfg, nnx.Rngs(seed)))[1]

    return nnx.merge(graphdef, make_state())
