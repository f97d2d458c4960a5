"""Summaries of run metrics for the figures.

They work on the rows of ``metrics.jsonl`` (crl_jax.training.metrics): a curve of one
metric key over steps, summarised over seeds as mean, std and min/max; final
values (mean of the last K points that carry the key); ratios of two arms'
finals with their per-seed spread.
"""
from __future__ import annotations

import difflib
from typing import Mapping, Sequence

import numpy as np


def curve(rows: Sequence[Mapping], key: str, where: str = "run") -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of the rows that carry ``key``, sorted by step."""
    pts = sorted((int(r["step"]), float(r[key])) for r in rows if key in r)
    if not pts:
        keys = sorted({k for r in rows for k in r if k not in ("step", "time")})
        # The closest names (a typo), not all of them: the figures print this
        # in their "Missing data" lists, where a run that predates a metric
        # is the usual cause.
        close = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
        raise KeyError(f"metric {key!r} is in no row of {where} (the record has {len(keys)} "
                       f"other metrics; closest: {', '.join(close) or 'none'})")
    steps, values = zip(*pts)
    return np.asarray(steps), np.asarray(values, float)


def seed_curves(runs: Mapping[int, Sequence[Mapping]], key: str) -> dict:
    """Curves of several seeds of one arm on the steps they all have: mean,
    std (population, ddof=0), min and max per step, plus every seed's values."""
    if not runs:
        raise ValueError(f"no runs to aggregate for {key!r}")
    per = {s: curve(rows, key, f"seed {s}") for s, rows in runs.items()}
    common = sorted(set.intersection(*(set(st.tolist()) for st, _ in per.values())))
    if not common:
        raise ValueError(f"the seeds {sorted(runs)} share no step with {key!r}")
    table = np.array([[dict(zip(st.tolist(), v))[c] for c in common] for st, v in per.values()])
    return {"key": key, "steps": common, "seeds": list(per),
            "mean": table.mean(0).tolist(), "std": table.std(0).tolist(),
            "min": table.min(0).tolist(), "max": table.max(0).tolist(),
            "per_seed": {str(s): row.tolist() for s, row in zip(per, table)}}


def final_value(rows: Sequence[Mapping], key: str, last_k: int = 1, first: bool = False) -> float:
    """Mean of the last ``last_k`` values of ``key`` (fewer if the run has
    fewer); with ``first``, of its first ``last_k`` values instead (a run's
    start: the warm start's evaluation, the first RL steps)."""
    if last_k < 1:
        raise ValueError(f"last_k={last_k} must be >= 1")
    _, values = curve(rows, key)
    return float((values[:last_k] if first else values[-last_k:]).mean())


def seed_finals(runs: Mapping[int, Sequence[Mapping]], key: str, last_k: int = 1,
                first: bool = False) -> dict:
    vals = {int(s): final_value(rows, key, last_k, first) for s, rows in runs.items()}
    if not vals:
        raise ValueError(f"no runs to aggregate for {key!r}")
    arr = np.array(list(vals.values()))
    return {"key": key, "last_k": last_k, "first": first,
            "per_seed": {str(s): v for s, v in vals.items()},
            "mean": float(arr.mean()), "std": float(arr.std()),
            "min": float(arr.min()), "max": float(arr.max()), "n": len(vals)}


def _divide(a: float, b: float) -> float:
    if b == 0:
        return float("nan") if a == 0 else float("inf")
    return a / b


def ratio(num: dict, den: dict) -> dict:
    """num / den of two ``seed_finals``: the ratio of the means, the ratio of
    the means over the seeds both have (what to quote when one arm has fewer
    seeds), and the per-seed ratios (paired by seed: seed s of num over seed s
    of den) with their mean, min and max. A zero denominator gives inf (nan
    for 0/0)."""
    paired = sorted(set(num["per_seed"]) & set(den["per_seed"]), key=int)
    per = {s: _divide(num["per_seed"][s], den["per_seed"][s]) for s in paired}
    finite = [v for v in per.values() if np.isfinite(v)]
    on_paired = (_divide(float(np.mean([num["per_seed"][s] for s in paired])),
                         float(np.mean([den["per_seed"][s] for s in paired])))
                 if paired else float("nan"))
    return {"ratio_of_means": _divide(num["mean"], den["mean"]), "per_seed": per,
            "paired_ratio_of_means": on_paired, "num_seeds": num["n"], "den_seeds": den["n"],
            "mean": float(np.mean(finite)) if finite else float("nan"),
            "min": float(min(finite)) if finite else float("nan"),
            "max": float(max(finite)) if finite else float("nan"),
            "paired_seeds": len(paired), "finite_seeds": len(finite)}
