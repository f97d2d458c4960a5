"""Reshaping a batch's KV cache between calls: keeping some rows, packing slots.

A multi-turn rollout continues each row's conversation from its cache
(models/sampler.py, ``GenerationState``). Two things would waste that cache:
episodes end at different turns, so their rows would still be computed at
every later turn; and all rows share slot numbers (each block is left-padded
to the batch's longest, each decode step takes a slot in every row until the
longest answer ends), so padding piles up turn after turn. ``take_rows``
keeps the live rows (a gather, compiled per bucket); ``pack_slots`` moves
each row's real tokens, in order, to the end of a window as wide as the
fullest row's, leaving the rest of the cache free. The Sampler compiles
both (``Sampler.select_rows``, ``Sampler._fit_cache``) with its cache layout.

Neither changes what a row computes: keys were rotated at their own
positions when written, each row keeps its next position, and attention
reads slots through the validity mask, so where a token sits is immaterial.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from models.decoder import KVCache

BATCH_AXIS = -4  # keys [..., B, heads, head_dim, slots], values [..., B, heads, slots, head_dim]
# The Sampler's default buckets: prompt blocks, cache slots, new tokens.
PROMPT_BUCKET, CACHE_BUCKET, NEW_TOKENS_BUCKET = 32, 128, 32


def round_up(n: int, bucket: int) -> int:
    """``n`` rounded up to a multiple of ``bucket`` (at least one bucket)."""
    return max(bucket, -(-n // bucket) * bucket)


def continued_cache_slots(max_prompt_tokens: int, max_new_tokens: int,
                          prompt_bucket: int = PROMPT_BUCKET, cache_bucket: int = CACHE_BUCKET,
                          new_tokens_bucket: int = NEW_TOKENS_BUCKET) -> int:
    """Slots a row of a continued conversation's cache reaches (the
    Sampler's default buckets). The cache grows only by packing, to the
    fullest row's tokens + the turn's block + the answer's slots; a row's
    tokens + its block are at most the conversation limit, so this is the
    limit, one block's padding (``prompt_bucket``) and the answer, rounded
    up. Rows whose new tokens in one turn differ by more than a bucket add
    that difference (a long reply beside a short one)."""
    return round_up(max_prompt_tokens + prompt_bucket + round_up(max_new_tokens,
                                                                 new_tokens_bucket),
                    cache_bucket)


def slot_use(valid: np.ndarray, rows: int, offset: int) -> float:
    """Real tokens / slots taken, over the first ``rows`` rows of a cache
    whose first ``offset`` slots are written (1.0: no padding)."""
    taken = rows * offset
    return float(valid[:rows, :offset].sum()) / taken if taken else 1.0


def pack_plan(valid: np.ndarray, extra: int, bucket: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Where each row's tokens go when packed into a cache with ``extra``
    free slots after them (its slots rounded up to ``bucket``):
    ``index[b, s]`` is the old slot that new slot ``s`` reads, ``keep[b, s]``
    whether it holds a real token; every row's tokens, in their order, end
    at the returned offset (the fullest row's count), so the next block
    follows them all."""
    counts = valid.sum(1)
    width = int(counts.max(initial=0))
    slots = round_up(width + extra, bucket)
    order = np.argsort(~valid, axis=1, kind="stable")  # each row's real slots first, in order
    new = np.arange(slots)[None, :]
    source = new - (width - counts)[:, None]  # the row's j-th real token lands at width - count + j
    keep = (source >= 0) & (new < width)
    index = np.take_along_axis(order, np.clip(source, 0, valid.shape[1] - 1), axis=1)
    return np.where(keep, index, 0).astype(np.int32), keep, width


def take_rows(cache: KVCache, index: jax.Array) -> KVCache:
    """The cache of rows ``index`` (new row r = old row index[r])."""
    take = lambda a: jnp.take(a, index, axis=a.ndim + BATCH_AXIS)  # noqa: E731
    return KVCache(jax.tree.map(take, cache.k), jax.tree.map(take, cache.v))


def pack_slots(cache: KVCache, index: jax.Array) -> KVCache:
    """A cache whose slot s of row b is old slot index[b, s] (``pack_plan``;
    as many slots as ``index`` has columns, more or fewer than before)."""
    def gather(a, slot_axis):
        shape = [1] * a.ndim
        shape[a.ndim + BATCH_AXIS] = index.shape[0]
        shape[slot_axis] = index.shape[1]
        return jnp.take_along_axis(a, jnp.reshape(index, shape), axis=slot_axis, mode="clip")

    k = jax.tree.map(lambda a: gather(a, a.ndim - 1), cache.k)
    v = jax.tree.map(lambda a: gather(a, a.ndim - 2), cache.v)
    return KVCache(k, v)
