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
to plan by.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from experiments.figures.script import fmt
from experiments.studies.oracle_ladder import whole_run

MARGIN = 0.2  # the bars' 1.2x GRPO, as a share of GRPO's success


def differences(runs: dict, reference: dict) -> dict[int, float]:
    """{seed: arm's whole-run training success - the reference's} for the
    seeds both ran."""
    seeds = sorted(set(runs) & set(reference))
    mine = whole_run({s: runs[s] for s in seeds})
    ref = whole_run({s: reference[s] for s in seeds})
    return {s: a - b for s, a, b in zip(seeds, mine, ref)}


def seeds_needed(spread: float, margin: float) -> float:
    """Seeds for a mean paired difference ``margin`` to lie two standard
    errors (``spread`` / sqrt(n)) from zero; nan without a margin or a spread."""
    if not margin or spread != spread or margin != margin:
        return float("nan")
    return float(math.ceil((2.0 * spread / abs(margin)) ** 2))


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "") + fmt(v)


def row(label: str, diffs: Sequence[float], grpo: Sequence[float]) -> list[str]:
    """[label, pairs, differences, mean (sd), seeds for its own mean, seeds
    for a 1.2x margin]; ``grpo`` are the reference's whole-run successes."""
    d = np.asarray(diffs, float)
    if len(d) == 0:
        return [label, "0", "-", "-", "-", "-"]
    m = float(d.mean())
    s = float(d.std(ddof=1)) if len(d) > 1 else float("nan")
    base = float(np.mean(grpo)) if len(grpo) else float("nan")
    need_own, need_bar = seeds_needed(s, m), seeds_needed(s, MARGIN * base)
    show = lambda n: "-" if n != n else str(int(n))  # noqa: E731
    return [label, str(len(d)), ", ".join(_signed(v) for v in d),
            f"{_signed(m)} ({'-' if s != s else fmt(s)})", show(need_own), show(need_bar)]


def table(groups: Sequence[tuple[str, dict, dict]], pooled: dict[str, str]) -> dict:
    """``groups``: (row label, {seed: rows} of the arm, of its GRPO) per arm;
    ``pooled``: {row label: substring of the arm labels it pools}."""
    rows, pools = [], {name: ([], []) for name in pooled}
    for label, runs, reference in groups:
        diffs = differences(runs, reference)
        grpo = whole_run({s: reference[s] for s in diffs})
        rows.append(row(label, list(diffs.values()), grpo))
        for name, part in pooled.items():
            if part in label:
                pools[name][0].extend(diffs.values())
                pools[name][1].extend(grpo)
    rows += [row(name, d, g) for name, (d, g) in pools.items()]
    return {"caption": "Each arm minus its group's GRPO on the same seed's warm start: training "
                       "success over every RL step, per seed; their mean (standard deviation); "
                       "the seeds at which that mean would lie two standard errors from zero; "
                       f"and the seeds a margin of {MARGIN:g} of GRPO's success (the bars' 1.2x) "
                       "would need at that spread. Pooled rows take every pair of their kind "
                       "over the groups.",
            "columns": ["arm", "pairs", "arm - GRPO per seed", "mean (sd)",
                        "seeds for its mean", "seeds for 1.2x"],
            "rows": rows}
