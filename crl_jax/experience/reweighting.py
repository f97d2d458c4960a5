"""Training-count-aware advantage reweighting of extractor samples."""
from __future__ import annotations

import numpy as np


def count_aware_weight(train_count, last_trained_step, step: int, cooldown_delta: int = 1,
                       alpha: float = 0.5) -> np.ndarray:
    """Paper Eq. 7: w(m) = 0 if t - t_last(m) < delta, else (1 + c_train(m))^(-alpha).

    `last_trained_step` entries that are None (never trained) or negative mean
    "never", so the cooldown cannot apply. Vectorised over entries.
    """
    counts = np.asarray(train_count, dtype=np.float64)
    last = np.array([-np.inf if t is None or t < 0 else float(t)
                     for t in np.atleast_1d(np.asarray(last_trained_step, dtype=object))])
    last = last.reshape(counts.shape)
    if np.any(counts < 0):
        raise ValueError(f"train counts must be >= 0, got {counts}")
    in_cooldown = (step - last) < cooldown_delta
    return np.where(in_cooldown, 0.0, (1.0 + counts) ** (-alpha))
