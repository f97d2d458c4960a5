"""The households issue's done-when bars for one learned recipe, read from
committed records alone, unrounded: the recipe's runs (one per seed), the
GRPO runs of the same warm starts, and the recipe and GRPO where objects
have no homes (``env.home_rate=0``), each list in seed order.

    python experiments/diagnostics/household_bars.py --recipe R0 R1 R2 --grpo G0 G1 G2 \\
        [--no_homes N0 N1 N2 --no_homes_grpo M0 M1 M2] [--root=DIR]

One line per bar: its value (per seed), the bar and whether it is met.
Training success is the mean over every RL step; guided minus free, and
the actions of won episodes, the mean over the last 5 steps; held-out
success, the last evaluation on new games of the pool's households.
"""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import tyro

from crl_jax.training.run_summary import mean, series
from experiments.figures.common import read_rows

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "figures", "runs")
WINDOW = 5  # last steps averaged, as the households tables do


@dataclasses.dataclass(frozen=True)
class Command:
    recipe: tuple[str, ...]
    """The learned recipe's runs, by name, one per seed."""
    grpo: tuple[str, ...]
    """GRPO's runs of the same warm starts, in the same seed order."""
    no_homes: tuple[str, ...] = ()
    """The recipe's runs where objects have no homes (optional)."""
    no_homes_grpo: tuple[str, ...] = ()
    """GRPO's runs where objects have no homes, in the same seed order."""
    root: str = ROOT
    """The directory that holds the runs."""


def _rows(root: str, names) -> list[list[dict]]:
    out = []
    for name in names:
        path = os.path.join(root, name, "metrics.jsonl")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{name}: no metrics.jsonl under {root}")
        out.append(read_rows(path))
    return out


def _all_steps(runs) -> list[float]:
    return [mean(series(rows, "train/success")) for rows in runs]


def _last(runs, key: str) -> list[float]:
    return [mean(series(rows, key)[-WINDOW:]) for rows in runs]


def _final(runs, key: str) -> list[float]:
    return [series(rows, key)[-1] if series(rows, key) else float("nan") for rows in runs]


def _per(values) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def bar_lines(recipe, grpo, no_homes=(), no_homes_grpo=()) -> list[str]:
    """The bars' lines, given each arm's metrics rows per seed."""
    recipe, grpo, no_homes, no_homes_grpo = (
        [[r for r in rows if r["step"] > 0] for rows in runs]  # step 0: before any RL
        for runs in (recipe, grpo, no_homes, no_homes_grpo))
    if len(recipe) != len(grpo):
        raise ValueError(f"{len(recipe)} recipe runs against {len(grpo)} GRPO runs: pair them by seed")
    mine, ref = _all_steps(recipe), _all_steps(grpo)
    ratio = np.mean(mine) / np.mean(ref)
    above = sum(m > r for m, r in zip(mine, ref))
    gap = np.subtract(_last(recipe, "train/success_guided"), _last(recipe, "train/success_free"))
    held = np.subtract(_final(recipe, "eval_with_exp/success"), _final(recipe, "eval_no_exp/success"))
    won = np.mean(_last(recipe, "train/actions_when_won"))
    won_guided = np.mean(_last(recipe, "train/actions_when_won_guided"))
    grpo_won = np.mean(_last(grpo, "train/actions_when_won"))

    def met(ok) -> str:
        return "met" if ok else "NOT met"
    lines = [
        f"training success, every RL step: {np.mean(mine):.3f} ({_per(mine)}) against GRPO "
        f"{np.mean(ref):.3f} ({_per(ref)}) = {ratio:.3f}x, above it on {above} of {len(mine)} "
        f"seeds; bar 1.2x and every seed: {met(ratio >= 1.2 and above == len(mine))}",
        f"guided minus free, last {WINDOW} steps: {gap.mean():+.3f} ({_per(gap)}); "
        f"bar +0.10: {met(gap.mean() >= 0.10)}",
        f"held out, with minus without the bank, last evaluation: {held.mean():+.3f} "
        f"({_per(held)}); bar +0.05: {met(held.mean() >= 0.05)}",
        f"actions of won episodes, last {WINDOW} steps: GRPO {grpo_won:.2f} / recipe {won:.2f} "
        f"= {grpo_won / won:.3f}x fewer (guided ones {won_guided:.2f}, "
        f"{grpo_won / won_guided:.3f}x); bar 1.3x: {met(grpo_won / won >= 1.3)}"]
    if no_homes:
        if len(no_homes) != len(no_homes_grpo):
            raise ValueError("pair the no-homes runs with as many no-homes GRPO runs, by seed")
        n, g = _all_steps(no_homes), _all_steps(no_homes_grpo)
        diff = np.mean(n) - np.mean(g)
        lines.append(f"no homes, every RL step: {np.mean(n):.3f} ({_per(n)}) against GRPO "
                     f"{np.mean(g):.3f} ({_per(g)}), {diff:+.3f}; bar within 0.05: "
                     f"{met(abs(diff) <= 0.05)}")
    return lines


def main(argv=None) -> int:
    c = tyro.cli(Command, args=sys.argv[1:] if argv is None else argv, description=__doc__)
    try:
        lines = bar_lines(_rows(c.root, c.recipe), _rows(c.root, c.grpo),
                          _rows(c.root, c.no_homes), _rows(c.root, c.no_homes_grpo))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
