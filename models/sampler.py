"""Batched generation with an explicit KV cache, compiled once per shape bucket.

Layout of a batch in the cache: all rows share slot numbers (a prompt block
is left-padded so rows end together); a [B, slots] validity mask says which
slots hold real tokens, and each row keeps its own next position, so padding
never shifts positions. A multi-turn conversation continues from the cache:
new tokens (the environment's reply) are written as one more left-padded
block after the existing slots, without re-encoding what came before.

The token that ended a row's generation (EOS, stop string) is kept and goes
into the cache at the start of the next block ("pending"), so a continued
conversation is the exact concatenation of everything sampled and appended.

Between calls, ``select_rows`` keeps the rows that go on (finished
conversations leave the batch), and a continued call packs each row's
tokens together (models/cache_rows.py) when the cache must grow or when
padding fills more than ``1 - min_slot_use`` of its written slots.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from models import cache_rows
from models.cache_rows import round_up
from models.decoder import Decoder, KVCache, causal_mask
from models.distributed import host_value
from models.sampling_ops import SamplingConfig, sample_tokens

# The cache's dimensions as the sharding rules name them: rows follow the
# batch rule, KV heads the heads' (models/sharding.py).
CACHE_AXES = ("layers", "batch", "kv_heads", "seq", "head_dim")  # values (KVCache)
KEY_CACHE_AXES = ("layers", "batch", "kv_heads", "head_dim", "seq")


def cache_sharding(mesh, shape, keys: bool = False) -> jax.sharding.NamedSharding | None:
    """Where a KV cache array of ``shape`` (stacked [layers, ...] or one
    layer's; ``keys``: a key array, slots last) lives on ``mesh`` (None: no
    mesh, the default device). Sharded over the batch like the rollout's
    rows: a whole rollout batch's cache on each device would not fit at
    paper scale."""
    if mesh is None:
        return None
    from models.sharding import logical_to_spec
    axes = (KEY_CACHE_AXES if keys else CACHE_AXES)[-len(shape):]
    return jax.sharding.NamedSharding(mesh, logical_to_spec(axes, shape, mesh))


def params_mesh(params):
    """The mesh the parameters are laid out on, None when they are not on one."""
    for leaf in jax.tree.leaves(params):
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, jax.sharding.NamedSharding):
            return sharding.mesh
    return None


@dataclasses.dataclass
class GenerationState:
    """The cache of a batch between calls (host-side bookkeeping + device arrays)."""

    cache: KVCache
    valid: np.ndarray  # [B, slots] bool: slot holds a real token of that row (on the host:
    # the sampler reads it between calls to drop rows and pack slots)
    offset: int  # first free slot (shared by all rows)
    next_pos: np.ndarray  # [B] position the next token of each row gets
    pending: list[list[int]]  # sampled tokens not yet written to the cache
    rows: int = -1  # the caller's rows; the rest (up to the batch bucket) are padding


@dataclasses.dataclass
class GenerationResult:
    tokens: list[list[int]]  # new tokens per row, stop token / string included
    logprobs: list[np.ndarray]  # their log-probs (see sample_tokens)
    stop_reason: list[str]  # "eos", "stop_string", "length", or "inactive"
    state: GenerationState
    prefilled: int = 0  # tokens this call wrote before decoding (pending ones included)
    cache_tokens: int = 0  # real tokens in the caller's rows of the cache after the call
    cache_slots: int = 0  # slots written in those rows (rows x first free slot)
    slots: int = 0  # the cache's slots a row (written or free) after the call


def batch_bucket(b: int) -> int:
    """Rows a batch of ``b`` is padded to: powers of two up to 8, then
    multiples of 8. A rollout's batch shrinks as episodes end (32, 30, 26,
    ...); without buckets every size would compile its own programs."""
    return 1 << (b - 1).bit_length() if b <= 8 else round_up(b, 8)


class Sampler:
    """Generates from a Decoder. ``update_params`` swaps in new weights
    (e.g. after a training step) without recompiling."""

    def __init__(self, model: Decoder, *, pad_id: int = 0,
                 prompt_bucket: int = cache_rows.PROMPT_BUCKET,
                 cache_bucket: int = cache_rows.CACHE_BUCKET,
                 new_tokens_bucket: int = cache_rows.NEW_TOKENS_BUCKET, min_slot_use: float = 0.7):
        self.graphdef, self.params = nnx.split(model)
        self.cfg = model.cfg
        self.pad_id = pad_id
        self.prompt_bucket, self.cache_bucket = prompt_bucket, cache_bucket
        self.new_tokens_bucket = new_tokens_bucket
        self.min_slot_use = min_slot_use  # real tokens / written slots below which a call packs
        self._prefill = jax.jit(functools.partial(_prefill, self.graphdef),
                                static_argnums=(7, 10), donate_argnums=(1,))
        self._decode = jax.jit(functools.partial(_decode_chunk, self.graphdef),
                               donate_argnums=(1,))
        self._cache_makers: dict = {}  # (rows, slots, mesh) -> compiled zero-cache maker
        self._reshapers: dict = {}  # (function, shapes, mesh) -> compiled row / slot gather

    def update_params(self, model_or_state) -> None:
        self.params = (nnx.state(model_or_state) if isinstance(model_or_state, nnx.Module)
                       else model_or_state)

    def generate(self, prompts: Sequence[Sequence[int]], config: SamplingConfig,
                 rng: jax.Array | int = 0, state: GenerationState | None = None,
                 decode: Callable[[list[int]], str] | None = None) -> GenerationResult:
        """Samples continuations of ``prompts`` (token ids, one list per row).

        With ``state`` (from a previous call on the same rows), each prompt is
        appended to that row's conversation. A row with nothing to add (empty
        prompt and nothing pending) is inactive: it gets no new tokens.
        ``decode`` (ids -> text) is required when stop strings are given.
        """
        if config.stop_strings and decode is None:
            raise ValueError("stop_strings need a decode function (token ids -> text)")
        rng = jax.random.PRNGKey(rng) if isinstance(rng, int) else rng
        rows = len(prompts)
        if state is not None and state.rows != rows:
            raise ValueError(f"state holds {state.rows} rows, got {rows} prompts")
        # Padding rows have no prompt: they are inactive and generate nothing.
        b = len(state.pending) if state is not None else batch_bucket(rows)
        prompts = list(prompts) + [[]] * (b - rows)
        blocks = [list(state.pending[i]) if state else [] for i in range(b)]
        for i, p in enumerate(prompts):
            if any((not isinstance(t, (int, np.integer))) or t < 0 or t >= self.cfg.vocab_size
                   for t in p):
                raise ValueError(f"prompt {i} has token ids outside [0, {self.cfg.vocab_size})")
            blocks[i] = blocks[i] + list(p)
        active = np.array([len(x) > 0 for x in blocks])
        t = round_up(max(1, max(len(x) for x in blocks)), self.prompt_bucket)
        max_new = round_up(config.max_new_tokens, self.new_tokens_bucket)
        tokens = np.full((b, t), self.pad_id, np.int32)
        tmask = np.zeros((b, t), bool)
        for i, x in enumerate(blocks):
            if x:
                tokens[i, t - len(x):] = x
                tmask[i, t - len(x):] = True
        fresh = state is None
        state = self._fit_cache(state, b, t + max_new)
        stop_ids = jnp.asarray(list(config.stop_token_ids) or [-1], jnp.int32)
        knobs = (jnp.float32(config.temperature), jnp.int32(config.top_k),
                 jnp.float32(config.top_p), jnp.int32(config.max_new_tokens), stop_ids)
        rng, sub = jax.random.split(rng)
        params = self.params  # one version for the whole call, even if another thread swaps it
        carry = self._prefill(
            params, (state.cache, jnp.asarray(state.valid)), jnp.int32(state.offset),
            jnp.asarray(state.next_pos, jnp.int32), jnp.asarray(tokens), jnp.asarray(tmask),
            jnp.asarray(active), max_new, sub, knobs, fresh)
        first_decode_slot = state.offset + t
        alive_host = host_value(carry["alive"]).copy()
        cut = [None] * b
        step = 1
        while alive_host.any() and step < config.max_new_tokens:
            stop_at = min(step + config.check_every, config.max_new_tokens)
            carry = self._decode(params, carry, jnp.int32(stop_at), knobs)
            step = int(carry["i"])
            alive_host = host_value(carry["alive"]).copy()
            if config.stop_strings:
                alive_host = self._check_stop_strings(carry, alive_host, cut, config, decode)
                carry["alive"] = jnp.asarray(alive_host)
        return self._finish(carry, cut, active, first_decode_slot, config, rows, int(tmask.sum()))

    def decode_program(self, prompts: Sequence[Sequence[int]], config: SamplingConfig):
        """The compiled decode loop that ``generate(prompts, config)`` runs
        (jax.stages.Compiled: its HLO text, memory analysis), found by
        running that call once and lowering the loop at its arguments'
        shapes; for inspection (the sampler profile, docs/BENCHMARKS.md; tests)."""
        shapes, decode = [], self._decode

        def capture(*args):  # shapes only: the carry is donated to the call
            shapes.append(jax.tree.map(
                lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype) if hasattr(a, "shape") else a,
                args))
            return decode(*args)

        self._decode = capture
        try:
            self.generate(prompts, config)
        finally:
            self._decode = decode
        if not shapes:
            raise ValueError("this call decodes nothing past its first token")
        return decode.lower(*shapes[0]).compile()

    def select_rows(self, state: GenerationState, rows: Sequence[int]) -> GenerationState:
        """The state of ``state``'s rows ``rows`` (old row numbers, in their
        new order), padded to the new batch bucket: a continued conversation
        whose other rows ended. The old state's cache is given up (donated)."""
        rows = list(rows)
        if any(not 0 <= r < state.rows for r in rows) or len(set(rows)) < len(rows):
            raise ValueError(f"rows {rows} are not distinct rows of a state of {state.rows}")
        b = batch_bucket(max(1, len(rows)))
        if rows == list(range(state.rows)) and b == len(state.pending):
            return state
        index = np.array(rows + [0] * (b - len(rows)), np.int32)
        real = np.arange(b) < len(rows)
        cache = self._reshaped(cache_rows.take_rows, state.cache, jnp.asarray(index))
        valid = state.valid[index] & real[:, None]
        next_pos = np.where(real, state.next_pos[index], 0).astype(np.int32)
        pending = [list(state.pending[r]) for r in rows] + [[] for _ in range(b - len(rows))]
        return GenerationState(cache, valid, state.offset, next_pos, pending, len(rows))

    def _fit_cache(self, state, b, extra) -> GenerationState:
        """A cache with ``extra`` free slots after the state's: a fresh one,
        the state's own, or (when it must grow, or when padding fills too
        much of it) one where each row's tokens are packed together."""
        if state is None:
            slots = round_up(extra, self.cache_bucket)
            cache = self._empty_cache(b, slots, params_mesh(self.params))
            return GenerationState(cache, np.zeros((b, slots), bool),
                                   0, np.zeros(b, np.int32), [[] for _ in range(b)], b)
        use = cache_rows.slot_use(state.valid, state.rows, state.offset)
        if state.offset + extra <= state.cache.slots and use >= self.min_slot_use:
            return state
        index, keep, width = cache_rows.pack_plan(state.valid, extra, self.cache_bucket)
        cache = self._reshaped(cache_rows.pack_slots, state.cache, jnp.asarray(index))
        return dataclasses.replace(state, cache=cache, valid=keep, offset=width)

    def _reshaped(self, fn, cache: KVCache, *args):
        """``fn(cache, *args)`` -> a cache, compiled once per shapes and mesh,
        laid out as ``_empty_cache`` lays out a cache; the old cache is
        donated where the new one has its shape."""
        mesh = params_mesh(self.params)
        key = (fn.__name__, mesh, tuple(a.shape for a in jax.tree.leaves((cache, args))))
        if key not in self._reshapers:
            shapes = jax.eval_shape(fn, cache, *args)
            shardings = None
            if mesh is not None:
                shardings = KVCache(
                    jax.tree.map(lambda a: cache_sharding(mesh, a.shape, keys=True), shapes.k),
                    jax.tree.map(lambda a: cache_sharding(mesh, a.shape), shapes.v))
            same = all(a.shape == b.shape for a, b in zip(jax.tree.leaves(cache),
                                                          jax.tree.leaves(shapes)))
            self._reshapers[key] = jax.jit(fn, out_shardings=shardings,
                                           donate_argnums=(0,) if same else ())
        return self._reshapers[key](cache, *args)

    def _empty_cache(self, b: int, slots: int, mesh) -> KVCache:
        """A zero cache of ``b`` rows and ``slots`` slots; on a mesh, made in
        place (a whole cache on one device first might not fit). The maker
        is compiled once per shape and mesh: compiling it at every call cost
        more than a small batch's whole prefill (docs/BENCHMARKS.md "Sampler")."""
        key = (b, slots, mesh)
        if key not in self._cache_makers:
            make = functools.partial(KVCache.zeros, self.cfg, b, slots)
            shardings = None
            if mesh is not None:
                shapes = jax.eval_shape(make)
                shardings = KVCache(
                    jax.tree.map(lambda a: cache_sharding(mesh, a.shape, keys=True), shapes.k),
                    jax.tree.map(lambda a: cache_sharding(mesh, a.shape), shapes.v))
            self._cache_makers[key] = jax.jit(make, out_shardings=shardings)
        return self._cache_makers[key]()

    def _check_stop_strings(self, carry, alive, cut, config, decode):
        out, n = host_value((carry["out"], carry["n_emitted"]))
        for i in range(len(alive)):
            if cut[i] is not None or n[i] == 0:
                continue
            text = decode(out[i, :n[i]].tolist())
            if not any(s in text for s in config.stop_strings):
                continue
            # Smallest prefix whose text contains a stop string.
            lo, hi = 1, int(n[i])
            while lo < hi:
                mid = (lo + hi) // 2
                if any(s in decode(out[i, :mid].tolist()) for s in config.stop_strings):
                    hi = mid
                else:
                    lo = mid + 1
            cut[i] = lo
            alive[i] = False
        return alive

    def _finish(self, carry, cut, active, first_decode_slot, config, rows,
                prefilled: int) -> GenerationResult:
        # one read (on a multi-process mesh: one gather) for all of them
        out, lps, n, fed, next_pos, valid = (x.copy() for x in host_value(
            tuple(carry[k] for k in ("out", "out_lp", "n_emitted", "fed", "next_pos", "valid"))))
        stop_ids = set(config.stop_token_ids)
        tokens, logprobs, reasons, pending = [], [], [], []
        for i in range(len(n)):
            reason = "length"
            if cut[i] is not None:
                if fed[i] > cut[i]:  # drop tokens sampled past the stop string
                    valid[i, first_decode_slot + cut[i]:first_decode_slot + fed[i]] = False
                    next_pos[i] -= fed[i] - cut[i]
                    fed[i] = cut[i]
                n[i] = cut[i]
                reason = "stop_string"
            elif n[i] and int(out[i, n[i] - 1]) in stop_ids:
                reason = "eos"
            if not active[i]:
                reason = "inactive"
            tokens.append(out[i, :n[i]].tolist())
            logprobs.append(lps[i, :n[i]].copy())
            reasons.append(reason)
            pending.append(out[i, fed[i]:n[i]].tolist())
        state = GenerationState(
            KVCache(carry["k"], carry["v"]), valid, int(carry["offset"]),
            next_pos, pending, rows)
        return GenerationResult(tokens[:rows], logprobs[:rows], reasons[:rows], state, prefilled,
                                cache_tokens=int(valid[:rows, :state.offset].sum()),
                                cache_slots=rows * state.offset, slots=state.cache.slots)


def _forward_last(graphdef, params, tokens, positions, mask, cache, offset, causal=False):
    model = nnx.merge(graphdef, params)
    hidden, cache = model.hidden_states(tokens, positions, mask, cache, offset, last_only=True,
                                        causal=causal)
    logits = jnp.dot(hidden[:, -1], model.unembedding().astype(hidden.dtype),
                     preferred_element_type=jnp.float32)
    return logits, cache


def _prefill(graphdef, params, cache_and_valid, offset, next_pos, tokens, tmask, active,
             max_new, rng, knobs, fresh: bool = False):
    """Writes a left-padded block into the cache and samples the first token.
    ``fresh`` (static): the cache holds nothing yet, so the block attends
    within itself rather than over every slot (at a 64-token prompt and 64
    new tokens, half of them empty)."""
    (cache, valid) = cache_and_valid
    temperature, top_k, top_p, limit, stop_ids = knobs
    b, t = tokens.shape
    slots = cache.slots
    positions = next_pos[:, None] + jnp.maximum(jnp.cumsum(tmask, axis=1) - 1, 0)
    valid = jax.lax.dynamic_update_slice(valid, tmask, (0, offset))
    if fresh:
        mask = causal_mask(tmask)
    else:
        query_slot = offset + jnp.arange(t)
        mask = valid[:, None, :] & (jnp.arange(slots)[None, None, :] <= query_slot[None, :, None])
    logits, cache = _forward_last(graphdef, params, tokens, positions, mask, cache, offset,
                                  causal=fresh)  # the fresh block's mask is causal
    tok, lp = sample_tokens(logits, rng, temperature, top_k, top_p)
    out = jnp.zeros((b, max_new), jnp.int32).at[:, 0].set(jnp.where(active, tok, 0))
    out_lp = jnp.zeros((b, max_new), jnp.float32).at[:, 0].set(jnp.where(active, lp, 0.0))
    n_emitted = active.astype(jnp.int32)
    alive = active & ~jnp.isin(tok, stop_ids) & (n_emitted < limit)
    return dict(k=cache.k, v=cache.v, valid=valid, offset=offset + t,
                next_pos=next_pos + tmask.sum(1).astype(jnp.int32), cur=tok, cur_valid=active,
                alive=alive, out=out, out_lp=out_lp, n_emitted=n_emitted,
                fed=jnp.zeros((b,), jnp.int32), i=jnp.int32(1), rng=rng)


def _decode_chunk(graphdef, params, carry, stop_at, knobs):
    """Decodes one token per step until ``stop_at`` steps or no row is alive."""
    temperature, top_k, top_p, limit, stop_ids = knobs
    max_new = carry["out"].shape[1]

    def cond(c):
        return (c["i"] < jnp.minimum(stop_at, max_new)) & c["alive"].any()

    def body(c):
        c = dict(c)
        off = c["offset"]
        valid = c["valid"].at[:, off].set(c["cur_valid"])
        slots = valid.shape[1]
        mask = valid[:, None, :] & (jnp.arange(slots)[None, None, :] <= off)
        logits, cache = _forward_last(graphdef, params, c["cur"][:, None],
                                      c["next_pos"][:, None], mask,
                                      KVCache(c["k"], c["v"]), off)
        step_valid = c["cur_valid"].astype(jnp.int32)
        rng, sub = jax.random.split(c["rng"])
        tok, lp = sample_tokens(logits, sub, temperature, top_k, top_p)
        emit = c["alive"]
        i = c["i"]
        c.update(
            k=cache.k, v=cache.v, valid=valid, offset=off + 1, rng=rng,
            next_pos=c["next_pos"] + step_valid, fed=c["fed"] + step_valid,
            out=c["out"].at[:, i].set(jnp.where(emit, tok, 0)),
            out_lp=c["out_lp"].at[:, i].set(jnp.where(emit, lp, 0.0)),
            n_emitted=c["n_emitted"] + emit.astype(jnp.int32), cur=tok, cur_valid=emit, i=i + 1)
        c["alive"] = emit & ~jnp.isin(tok, stop_ids) & (c["n_emitted"] < limit)
        return c

    return jax.lax.while_loop(cond, body, carry)
