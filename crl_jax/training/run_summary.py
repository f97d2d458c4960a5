"""The table a run prints when it ends (from its metrics.jsonl rows): what
a reader of the run wants before opening TensorBoard. Training success on the pool, split into the
guided episodes (an experience line in the prompt) and the free ones, at
the start and the end of training, with the actions a won episode took;
and every held-out evaluation, with and without experience.

The split is the method's own control: Comp. RL pays only where guided
episodes win more often, or in fewer actions, than free ones of the same
tasks and step.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

WINDOW = 5  # training steps averaged at the start and at the end


def series(rows: Sequence[Mapping], key: str) -> list[float]:
    """``key``'s values in step order, over the rows that carry it."""
    return [float(r[key]) for r in sorted(rows, key=lambda r: r["step"]) if key in r]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _mean(rows: Sequence[Mapping], key: str) -> float:
    return mean(series(rows, key))


def _cell(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"  # "-": not measured


def training_table(history: Sequence[dict], window: int = WINDOW) -> list[str]:
    """Rows for the first and the last ``window`` training steps (means)."""
    steps = sorted((r for r in history if "train/success" in r), key=lambda r: r["step"])
    if not steps:
        return []
    first, last = steps[:window], steps[-window:]
    out = ["| training steps | success | guided | free | guided - free "
           "| actions when won, guided / free |",
           "|---|---|---|---|---|---|"]
    for rows in (first, last) if len(steps) > window else (first,):
        g, f = _mean(rows, "train/success_guided"), _mean(rows, "train/success_free")
        ag, af = _mean(rows, "train/actions_when_won_guided"), _mean(rows,
                                                                    "train/actions_when_won_free")
        gap = "-" if math.isnan(g - f) else f"{g - f:+.2f}"
        actions = f"{_cell(ag, 1)} / {_cell(af, 1)}"
        out.append(f"| {rows[0]['step']}-{rows[-1]['step']} | "
                   f"{_cell(_mean(rows, 'train/success'))} | {_cell(g)} | {_cell(f)} | {gap} | "
                   f"{actions} |")
    return out


def evaluation_table(history: Sequence[dict]) -> list[str]:
    """One row per evaluation: held-out success without / with experience."""
    evals = sorted((r for r in history if any(k.startswith("eval") and k.endswith("/success")
                                              for k in r)), key=lambda r: r["step"])
    if not evals:
        return []
    out = ["| evaluated at step | held-out success, no experience | with experience "
           "| actions, no exp. / with |",
           "|---|---|---|---|"]
    for r in evals:
        no, w = r.get("eval_no_exp/success", math.nan), r.get("eval_with_exp/success", math.nan)
        an, aw = r.get("eval_no_exp/actions", math.nan), r.get("eval_with_exp/actions", math.nan)
        out.append(f"| {r['step']} | {_cell(no)} | {_cell(w)} | {_cell(an, 1)} / {_cell(aw, 1)} |")
    return out


def format_summary(history: Sequence[dict], window: int = WINDOW) -> str:
    """Both tables, as Markdown (empty sections left out)."""
    parts = []
    train = training_table(history, window)
    if train:
        parts.append(f"Training pool (means over the first and the last {window} steps):\n"
                     + "\n".join(train))
    ev = evaluation_table(history)
    if ev:
        parts.append("Held-out games:\n" + "\n".join(ev))
    return "\n\n".join(parts)
