"""Retrieval diversification: re-rank an oversampled candidate pool."""
from __future__ import annotations

import numpy as np

from crl_jax.experience.config import DIVERSITY_SCORES


def diversified_scores(rank_scores, retrieval_counts, last_retrieval_times, now: float,
                       diversity_lambda: float = 0.4, recency_window: float = 300.0,
                       score: str = "similarity") -> np.ndarray:
    """Paper Eq. 6: s(m) = s_rank(m) - lambda * log(1 + c(m)) - 1[m retrieved within the window].

    ``rank_scores`` are the candidates' cosine similarities to the query, in
    the order the search returned them (best first). What s_rank is:

    - score="similarity" (the paper's text): the similarity itself
      (1 - usearch distance).
    - score="rank" (the authors' released code, ``_diversify_uids_by_usage``
      in roll/pipeline/agentic/memory/async_memory_manager.py): minus the
      candidate's position in that order, 0 for the first, so the
      penalties (1 for recency, 0.44 for lambda log(1 + c) at lambda 0.4,
      c = 2) move an entry a place or two down, not across the pool. The
      penalties are summed first, as there.

    Times (``now``, the last retrievals, the window) are in one unit:
    seconds, or actor steps (ExperienceConfig.recency_clock). A last
    retrieval time of -inf means never retrieved.
    """
    if score not in DIVERSITY_SCORES:
        raise ValueError(f"score must be one of {DIVERSITY_SCORES}, got {score!r}")
    s_rank = np.asarray(rank_scores, dtype=np.float64)
    counts = np.asarray(retrieval_counts, dtype=np.float64)
    last = np.asarray(last_retrieval_times, dtype=np.float64)
    recent = ((now - last) < recency_window).astype(np.float64)
    if score == "rank":
        return -np.arange(len(s_rank), dtype=np.float64) - (
            diversity_lambda * np.log1p(counts) + recent)
    return s_rank - diversity_lambda * np.log1p(counts) - recent


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

    With `shuffle_recent_top1` (the released code's dropout, after its
    re-ranking in ``_diversify_uids_by_usage``), a top-1 candidate that was
    retrieved recently moves to the end of the whole re-ranked pool with
    probability `shuffle_prob`, before the k are taken: one draw from `rng`
    whenever the top-1 is recent and the probability is above 0.
    """
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    if (shuffle_recent_top1 and shuffle_prob > 0 and recent is not None and len(order)
            and bool(np.asarray(recent)[order[0]])):
        if (rng or np.random.default_rng()).random() < shuffle_prob:
            order = np.concatenate([order[1:], order[:1]])
    return order[:k]
