"""Training batches: samples as the rollout makes them, packed as the learners read them.

A `Sample` is one token sequence with its loss mask, behaviour log-probs and
advantage; `pack_samples` right-pads a list of them into shifted [B, T] arrays
and `micro_batch_plan` cuts those into micro-batches of similar width.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np


@dataclasses.dataclass
class Sample:
    """One training sequence: tokens, which of them are trained (loss mask),
    their behaviour log-probs, and their advantage (per token or scalar)."""

    tokens: list[int]
    loss_mask: list[int]
    old_logprobs: list[float] | np.ndarray | None = None
    advantage: float | Sequence[float] = 0.0


@dataclasses.dataclass
class PackedBatch:
    tokens: np.ndarray  # [B, T] inputs
    input_mask: np.ndarray  # [B, T]
    targets: np.ndarray  # [B, T] next tokens
    loss_mask: np.ndarray  # [B, T] on targets
    old_logprobs: np.ndarray  # [B, T] on targets
    advantages: np.ndarray  # [B, T] on targets


def pack_samples(samples: Sequence[Sample], pad_id: int, micro_batch: int,
                 length_bucket: int = 32) -> PackedBatch:
    """Right-pads samples into [B, T] arrays shifted for next-token prediction.

    Position t predicts token t+1, so a sample's loss mask, old log-probs and
    advantages (given per token) move one place left. B is rounded up to a
    multiple of ``micro_batch`` with empty rows (mask 0 everywhere).
    """
    if not samples:
        raise ValueError("pack_samples needs at least one sample")
    longest = max(len(s.tokens) for s in samples)
    t = -(-longest // length_bucket) * length_bucket
    b = -(-len(samples) // micro_batch) * micro_batch
    out = PackedBatch(*(np.zeros((b, t), dt) for dt in
                        (np.int32, bool, np.int32, np.float32, np.float32, np.float32)))
    out.tokens[:] = pad_id
    for i, s in enumerate(samples):
        n = len(s.tokens)
        if len(s.loss_mask) != n:
            raise ValueError(f"sample {i}: {n} tokens but {len(s.loss_mask)} mask entries")
        out.tokens[i, :n] = s.tokens
        out.input_mask[i, :n] = True
        out.targets[i, :n - 1] = s.tokens[1:]
        out.loss_mask[i, :n - 1] = np.asarray(s.loss_mask[1:], np.float32)
        if s.old_logprobs is not None:
            out.old_logprobs[i, :n - 1] = np.asarray(s.old_logprobs, np.float32)[1:]
        adv = np.broadcast_to(np.asarray(s.advantage, np.float32), (n,))
        out.advantages[i, :n - 1] = adv[1:]
    return out


def _ladder_width(n: int) -> int:
    """The smallest of 32 * 2^k and 48 * 2^k that holds ``n`` tokens."""
    width = 32
    while True:
        if width >= n:
            return width
        if width * 3 // 2 >= n:
            return width * 3 // 2
        width *= 2


def micro_batch_plan(input_mask: np.ndarray, micro_batch: int,
                     trim: bool = True) -> list[tuple[np.ndarray, int]]:
    """(row indices, width) of each micro-batch of a packed [B, T] batch.

    With ``trim`` the rows go longest first, so each micro-batch holds rows of
    similar length, and it is cut to its longest row rounded up to the next
    of 32, 48, 64, 96, 128, 192, ... (at most T; beyond 32 tokens at most
    1.5x its longest row): a mixture of short MiniHack and long WebShop
    prompts no longer pays the longest prompt's width on every row, while the
    widths, and so the compiled programs, stay few. Micro-batches of only
    padding rows are dropped, except the first when the whole batch is
    padding (the update is then the zero-gradient step it always was). The
    loss sums are order-free and right padding past a row's end is never read
    by its real tokens (causal attention), so the update is the untrimmed one
    up to float summation order. Without ``trim``: the rows in
    order, every micro-batch at width T."""
    b, t = input_mask.shape
    if b % micro_batch:
        raise ValueError(f"batch of {b} rows is not a multiple of micro_batch={micro_batch}")
    if not trim:
        return [(np.arange(i, i + micro_batch), t) for i in range(0, b, micro_batch)]
    lengths = input_mask.sum(1)
    order = np.argsort(-lengths, kind="stable")
    plan = []
    for i in range(0, b, micro_batch):
        rows = order[i:i + micro_batch]
        longest = int(lengths[rows].max())
        if longest == 0 and plan:
            break  # sorted: only empty rows from here on
        plan.append((rows, min(_ladder_width(longest), t)))
    return plan
