"""Token selection from logits: temperature, top-k, top-p, greedy.

Kept apart from the sampler's cache bookkeeping so it can be tested alone.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """How new tokens are chosen and when generation stops.

    temperature 0 means greedy. top_k 0 and top_p 1 disable those filters.
    Stop strings are matched on the decoded text between decode chunks of
    ``check_every`` steps; the output is cut after the first match (at token
    granularity: the token that completes the stop string is kept).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 64
    stop_token_ids: tuple[int, ...] = ()
    stop_strings: tuple[str, ...] = ()
    check_every: int = 16

    def __post_init__(self):
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.check_every < 1:
            raise ValueError(f"check_every must be >= 1, got {self.check_every}")


def strip_stop_tokens(tokens, config: SamplingConfig) -> list[int]:
    """Generated ids without the stop token(s) that ended them (for decoding text)."""
    stops = set(config.stop_token_ids)
    return [t for t in tokens if t not in stops]


def _filter_top_k_top_p(scaled, top_k, top_p):
    """Masks (to -inf) tokens outside the top-k set and the top-p nucleus."""
    v = scaled.shape[-1]
    order = jnp.argsort(-scaled, axis=-1)
    sorted_logits = jnp.take_along_axis(scaled, order, axis=-1)
    rank = jnp.arange(v)
    keep_sorted = jnp.where(top_k > 0, rank < top_k, True)
    probs = jax.nn.softmax(jnp.where(keep_sorted, sorted_logits, -jnp.inf), axis=-1)
    # A token stays if the mass strictly before it is below top_p (the top-1
    # token always stays).
    before = jnp.cumsum(probs, axis=-1) - probs
    keep_sorted = keep_sorted & (before < top_p)
    keep = jnp.zeros_like(keep_sorted).at[
        jnp.arange(scaled.shape[0])[:, None], order].set(keep_sorted)
    return jnp.where(keep, scaled, -jnp.inf)


def first_argmax(logits):
    """jnp.argmax over the last axis (the first index of the maximum), as a
    max and a min over indices: XLA's CPU backend runs argmax's paired
    (value, index) reduction slower than two plain ones. A row holding NaN,
    where argmax would pick the first NaN, gets the last index."""
    top = logits.max(-1, keepdims=True)
    v = logits.shape[-1]
    first = jnp.min(jnp.where(logits == top, jnp.arange(v), v), axis=-1)
    return jnp.minimum(first, v - 1)


def sample_tokens(logits, rng, temperature, top_k, top_p):
    """Samples one token per row of fp32 ``logits`` [B, V].

    Returns (tokens [B], log-probs [B]). The log-prob is that of the token
    under the temperature-scaled distribution before top-k/top-p filtering,
    the distribution a trainer recomputes (log_softmax(logits / T)); for
    greedy decoding it is the plain log_softmax.
    """
    logits = logits.astype(jnp.float32)
    greedy = temperature <= 0
    scaled = logits / jnp.where(greedy, 1.0, temperature)
    logp_all = jax.nn.log_softmax(scaled, axis=-1)
    needs_filter = (top_k > 0) | (top_p < 1.0)
    filtered = jax.lax.cond(needs_filter, _filter_top_k_top_p, lambda s, k, p: s,
                            scaled, top_k, top_p)
    # Greedy decoding draws no random numbers: a Gumbel draw over the whole
    # vocabulary is a large share of a small model's decode step on CPU.
    tokens = jax.lax.cond(greedy, lambda f: first_argmax(logits),
                          lambda f: jax.random.categorical(rng, f, axis=-1),
                          filtered).astype(jnp.int32)
    return tokens, jnp.take_along_axis(logp_all, tokens[:, None], axis=-1)[:, 0]
