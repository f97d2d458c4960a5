"""Paired seed differences: how far seeds move an arm against its GRPO.

Every arm of a study group shares its seed's warm start with the group's
GRPO, so the per-seed difference of training success (over every RL step)
cancels what the warm start gives both; what is left is the arm's effect
plus RL's own noise. Their spread says how many seeds a margin needs: a
mean difference d with standard deviation s is two standard errors from
zero at n = (2 s / d)^2 seeds. The margin the households bars ask (1.2x
GRPO) is 0.2 of GRPO's success, so the seeds it needs follow from s alone.

The pooled row takes every (arm, seed) pair of a kind of arm (the oracle
lesson) over the groups: one regime's three seeds give a spread too rough
to plan by. Half of an arm's episodes read no experience (split-GRPO's free
half), so its guided and its free episodes are also set against GRPO's
apart: what the line gives the episodes that read it, and what the free
ones lose or gain beside them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from crl_jax.training.run_summary import mean, series
from experiments.figures.script import fmt

MARGIN = 0.2  # the bars' 1.2x GRPO, as a share of GRPO's success


def whole_run(rows, key: str = "train/success") -> float:
    """``key``'s mean over every RL step (step 0, the warm start's
    evaluation, has none)."""
    return mean(series([r for r in rows if r["step"] > 0], key))


def differences(runs: dict, reference: dict, key: str = "train/success") -> dict[int, float]:
    """{seed: the arm's whole-run ``key`` - the reference's whole-run
    training success} for the seeds both ran."""
    seeds = sorted(set(runs) & set(reference))
    return {s: whole_run(runs[s], key) - whole_run(reference[s]) for s in seeds}


def _by_step(rows) -> dict[int, float]:
    """{RL step: training success} (step 0, the warm start's evaluation, has none)."""
    return {r["step"]: r["train/success"] for r in rows if r["step"] > 0 and "train/success" in r}


def step_differences(runs: dict, reference: dict) -> list[float]:
    """The arm's training success minus the reference's at the same RL step,
    over every step both recorded, seed after seed. Runs that draw their
    games by seed and step (train.step_seeded_draws) play the same games at
    each step, so these differences leave out which games a step drew."""
    out = []
    for seed in sorted(set(runs) & set(reference)):
        arm, ref = _by_step(runs[seed]), _by_step(reference[seed])
        out += [arm[step] - ref[step] for step in sorted(arm.keys() & ref.keys())]
    return out


def _pairs(runs: dict, reference: dict) -> tuple[list[float], ...]:
    """(arm - GRPO, GRPO, guided - GRPO, free - GRPO, arm - GRPO per step)
    over the seeds both ran."""
    total, guided, free = (list(differences(runs, reference, key).values()) for key in
                           ("train/success", "train/success_guided", "train/success_free"))
    grpo = [whole_run(reference[s]) for s in sorted(set(runs) & set(reference))]
    return total, grpo, guided, free, step_differences(runs, reference)


def seeds_needed(spread: float, margin: float) -> float:
    """Seeds for a mean paired difference ``margin`` to lie two standard
    errors (``spread`` / sqrt(n)) from zero; nan without a margin or a spread."""
    if not margin or spread != spread or margin != margin:
        return float("nan")
    return float(math.ceil((2.0 * spread / abs(margin)) ** 2))


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "") + fmt(v)


def _mean_cell(diffs: Sequence[float]) -> str:
    d = [v for v in diffs if v == v]
    return f"{_signed(float(np.mean(d)))} ({', '.join(_signed(v) for v in d)})" if d else "-"


def row(label: str, diffs: Sequence[float], grpo: Sequence[float],
        guided: Sequence[float] = (), free: Sequence[float] = (),
        steps: Sequence[float] = ()) -> list[str]:
    """[label, pairs, differences, mean (sd), seeds for its own mean, seeds
    for a 1.2x margin, guided - GRPO, free - GRPO, per-step sd]; ``grpo`` are
    the reference's whole-run successes, ``guided`` and ``free`` the arm's
    guided and free episodes' differences to them (nan without any),
    ``steps`` the step-by-step differences (step_differences)."""
    d = np.asarray(diffs, float)
    if len(d) == 0:
        return [label, "0", "-", "-", "-", "-", "-", "-", "-"]
    m = float(d.mean())
    s = float(d.std(ddof=1)) if len(d) > 1 else float("nan")
    base = float(np.mean(grpo)) if len(grpo) else float("nan")
    return [label, str(len(d)), ", ".join(_signed(v) for v in d),
            f"{_signed(m)} ({'-' if s != s else fmt(s)})", _count(seeds_needed(s, m)),
            _count(seeds_needed(s, MARGIN * base)), _mean_cell(guided), _mean_cell(free),
            fmt(float(np.std(steps, ddof=1))) if len(steps) > 1 else "-"]


def _count(n: float) -> str:
    return "-" if n != n else str(int(n))


def table(groups: Sequence[tuple[str, dict, dict]], pooled: dict[str, str]) -> dict:
    """``groups``: (row label, {seed: rows} of the arm, of its GRPO) per arm;
    ``pooled``: {row label: substring of the arm labels it pools}."""
    rows, pools = [], {name: ([], [], [], [], []) for name in pooled}
    for label, runs, reference in groups:
        parts = _pairs(runs, reference)
        rows.append(row(label, *parts))
        for name, part in pooled.items():
            if part in label:
                for pool, values in zip(pools[name], parts):
                    pool.extend(values)
    rows += [row(name, *pool) for name, pool in pools.items()]
    return {"caption": "Each arm minus its group's GRPO on the same seed's warm start: training "
                       "success over every RL step, per seed; their mean (standard deviation); "
                       "the seeds at which that mean would lie two standard errors from zero; "
                       f"and the seeds a margin of {MARGIN:g} of GRPO's success (the bars' 1.2x) "
                       "would need at that spread; the arm's guided and free episodes minus "
                       "GRPO's episodes, seed mean (per seed); the standard deviation of the "
                       "arm's step-by-step difference from GRPO (arms that draw each step's "
                       "games by seed and step play the same games as their GRPO). Pooled "
                       "rows take every pair of their kind over the groups.",
            "columns": ["arm", "pairs", "arm - GRPO per seed", "mean (sd)",
                        "seeds for its mean", "seeds for 1.2x", "guided - GRPO",
                        "free - GRPO", "per-step sd"],
            "rows": rows}
