"""Loss aggregation as exact (sum, count) pairs.

Every mode is written as loss = sum / count with

    sum   = sum over tokens of weight_t * loss_t
    count = a number that adds up across micro-batches and shards

so that a batch split along its sequence axis into any micro-batches or
data-parallel shards gives, after summing the pieces' sums and counts,
exactly the full-batch loss (and gradient: d(sum)/d(theta) adds up too).
Sequences must not be split across pieces (shard on the batch axis).

Modes (B sequences, n_s = masked-in tokens of sequence s, S = number of
sequences with n_s > 0):

    token-mean               sum_s sum_t loss / sum_s n_s        weight 1,      count sum_s n_s
    seq-mean-token-mean      1/S sum_s (sum_t loss / n_s)        weight 1/n_s,  count S
    seq-mean-token-sum       1/S sum_s sum_t loss                weight 1,      count S
    seq-mean-token-sum-norm  1/S sum_s sum_t loss / L            weight 1/L,    count S

L is a fixed constant from the config (Dr. GRPO: the maximum generation
length), never the padded length of the batch at hand, because the padded
length differs between micro-batches and would break exactness.

A sequence with no masked-in tokens contributes nothing and is not counted.
A batch with no tokens at all has sum = 0 and count = 0; loss_from_sum_count
returns 0 for it (and a zero gradient), never NaN.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

AGGREGATION_MODES = (
    "token-mean",
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)


def check_aggregation(mode: str, norm_constant: float | None) -> None:
    """Raises ValueError when mode is unknown or its norm constant is missing/bad."""
    if mode not in AGGREGATION_MODES:
        raise ValueError(f"aggregation must be one of {AGGREGATION_MODES}; got {mode!r}")
    if mode == "seq-mean-token-sum-norm":
        if norm_constant is None or not np.isfinite(norm_constant) or norm_constant <= 0:
            raise ValueError(
                "aggregation 'seq-mean-token-sum-norm' needs norm_constant, a finite "
                f"number > 0 (e.g. the maximum generation length); got {norm_constant!r}")
    elif norm_constant is not None:
        raise ValueError(
            f"norm_constant is only used by 'seq-mean-token-sum-norm'; got "
            f"{norm_constant!r} with aggregation {mode!r}")


def aggregation_weights(mask, mode: str, norm_constant: float | None = None):
    """Per-token weights and the count for one piece of a batch.

    Args:
      mask: [..., T] (bool or 0/1); the last axis is the sequence (tokens of one
        sequence), leading axes index sequences. Nonzero = token counts.
      mode: one of AGGREGATION_MODES.
      norm_constant: L for 'seq-mean-token-sum-norm', else None.

    Returns:
      (weights [..., T] fp32, zero where mask is zero; count, fp32 scalar).
    """
    check_aggregation(mode, norm_constant)
    if mask.ndim < 1:
        raise ValueError(f"mask must have a sequence axis ([..., T]); got shape {mask.shape}")
    valid = (mask != 0).astype(jnp.float32)
    tokens_per_seq = valid.sum(axis=-1, keepdims=True)
    num_seqs = (tokens_per_seq > 0).astype(jnp.float32).sum()
    if mode == "token-mean":
        return valid, valid.sum()
    if mode == "seq-mean-token-mean":
        return valid / jnp.maximum(tokens_per_seq, 1.0), num_seqs
    if mode == "seq-mean-token-sum":
        return valid, num_seqs
    return valid / float(norm_constant), num_seqs


def aggregate(per_token_loss, mask, mode: str, norm_constant: float | None = None):
    """(sum, count) of a per-token loss [..., T] under an aggregation mode.

    Masked-out positions are selected away (not multiplied by 0), so NaN/inf
    there never reaches the sum or its gradient.
    """
    if per_token_loss.shape != mask.shape:
        raise ValueError(
            f"per_token_loss {per_token_loss.shape} and mask {mask.shape} must have one shape")
    weights, count = aggregation_weights(mask, mode, norm_constant)
    safe = jnp.where(weights != 0, per_token_loss, 0.0)
    return jnp.sum(safe * weights), count


def loss_from_sum_count(loss_sum, count):
    """sum / count, or 0 when count is 0 (a batch without tokens), with a
    finite (zero) gradient in that case."""
    safe_count = jnp.where(count > 0, count, 1.0)
    return jnp.where(count > 0, loss_sum / safe_count, 0.0)
