"""Retrieval diversification: re-rank an oversampled candidate pool."""
from __future__ import annotations

import numpy as np


def diversified_scores(rank_scores, retrieval_counts, last_retrieval_times, now: float,
                       diversity_lambda: float = 0.4, recency_window: float = 300.0) -> np.ndarray:
    """Paper Eq. 6: s(m) = s_rank(m) - lambda * log(1 + c(m)) - 1[m retrieved within the window].

    s_rank is the retrieval similarity (cosine, 1 - usearch distance). Times
    (``now``, the last retrievals, the window) are in one unit: seconds, or
    actor steps (ExperienceConfig.recency_clock). A last retrieval time of
    -inf means never retrieved.
    """
    s_rank = np.asarray(rank_scores, dtype=np.float64)
    counts = np.asarray(retrieval_counts, dtype=np.float64)
    last = np.asarray(last_retrieval_times, dtype=np.float64)
    recent = (now - last) < recency_window
    return s_rank - diversity_lambda * np.log1p(counts) - recent.astype(np.float64)


class StepClock:
    """Eq. 6's clock in actor steps (ExperienceConfig.recency_clock="steps"):
    the trainer sets ``step`` as each actor step begins, so "retrieved within
    the window" means the same on any machine, however fast it steps."""

    def __init__(self, step: int = 0):
        self.step = step

    def __call__(self) -> float:
        return float(self.step)


def select_top_k(scores, k: int, recent=None, shuffle_recent_top1: bool = False,
                 shuffle_prob: float = 0.5, rng: np.random.Generator | None = None) -> np.ndarray:
    """Indices of the k best scores (ties keep the original rank order).

    With `shuffle_recent_top1` (the released code's variant), a top-1 candidate
    that was retrieved recently moves to the end with probability `shuffle_prob`.
    """
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    if shuffle_recent_top1 and recent is not None and len(order) > 1 and bool(np.asarray(recent)[order[0]]):
        if (rng or np.random.default_rng()).random() < shuffle_prob:
            order = np.concatenate([order[1:], order[:1]])
    return order[:k]
