"""Beyond the paper, before it: does the actor read its experience? The
oracle ladder (experience.mode=oracle: the episode's own game's plan as the
entry, with 0, 1 or 2 wrong steps, or another game's plan) against no
experience, from one warm start. Guided and free episodes of the same step
are compared: if the own plan does not make guided episodes win more often,
or with fewer actions, no bank can, and the setup is what needs fixing.
Comp. RL (Fig. 6's arm, the same warm start) is drawn beside the rungs, and
every arm's training success over all RL steps is set against GRPO's: it
says which rung the learned bank behaves like.

    python experiments/studies/oracle_ladder.py --budget=full
"""
from __future__ import annotations

import os
import sys


import numpy as np

from crl_jax.training.run_summary import mean, series
from experiments.figures import aggregate, common, plots
from experiments.figures.ablation import Variant, variant_arms
from experiments.figures.fig6_success import COMP
from experiments.figures.script import attempt, figure_main, fmt, report

PRESETS = ("alfworld_cpu", "minihack_room_cpu")
VARIANTS = (Variant("Oracle, own plan", "oracle", ("controls.oracle_noise=0",)),
            Variant("Oracle, 1 wrong step", "oracle", ("controls.oracle_noise=1",)),
            Variant("Oracle, 2 wrong steps", "oracle", ("controls.oracle_noise=2",)),
            Variant("Oracle, another game's plan", "oracle", ("controls.oracle_source=peer",)),
            Variant(COMP),  # the learned bank, for comparison: not a rung
            Variant("No experience (GRPO)", "none"))
WINDOW = 5  # steps averaged at the start and the end of training


def _plan(budget: str):
    """(presets, variants) of a budget: the quick budget only checks the
    machinery, with the own-plan oracle and its null on ALFWorld."""
    if budget == "quick":
        return PRESETS[:1], (VARIANTS[0], VARIANTS[-1])
    return PRESETS, VARIANTS


def arms(budget: str):
    presets, variants = _plan(budget)
    return [a for p in presets for a in variant_arms(p, budget, variants)]


def _window(rows, key: str, first: bool) -> float:
    values = series([r for r in rows if r["step"] > 0], key)
    return mean(values[:WINDOW] if first else values[-WINDOW:])


def _seed_mean(runs: dict, key: str, first: bool) -> tuple[float, list[float]]:
    per = [_window(rows, key, first) for _, rows in sorted(runs.items())]
    return float(np.nanmean(per)) if per else float("nan"), per


def _whole_run(runs: dict) -> list[float]:
    """Each seed's training success, mean over all RL steps (guided and free
    episodes together): the window measures miss a run that is ahead for
    most of training and caught up at its end."""
    return [mean(series([r for r in rows if r["step"] > 0], "train/success"))
            for _, rows in sorted(runs.items())]


def _whole_run_cell(runs: dict, reference: dict) -> str:
    """Seed mean of _whole_run, its per-seed values and its ratio to the
    reference's seed mean (GRPO's)."""
    mine = _whole_run(runs)
    if not mine:
        return "-"
    m = float(np.nanmean(mine))
    ref = _whole_run(reference)
    r = m / float(np.nanmean(ref)) if ref and np.nanmean(ref) else float("nan")
    ratio = "" if r != r else f", {fmt(r)}x GRPO"
    return f"{fmt(m)} ({', '.join(fmt(v) for v in mine)}{ratio})"


def _cells(runs: dict) -> list[str]:
    """guided - free success (first and last steps), actions when won free / guided."""
    out = []
    for first in (True, False):
        g, gs = _seed_mean(runs, "train/success_guided", first)
        f, fs = _seed_mean(runs, "train/success_free", first)
        per = ", ".join(fmt(a - b) for a, b in zip(gs, fs))
        out.append(f"{fmt(g)} / {fmt(f)} ({'+' if g >= f else ''}{fmt(g - f)}; seeds {per})")
    out.append(" -> ".join(_actions(runs, first) for first in (True, False)))
    return out


def _actions(runs: dict, first: bool) -> str:
    """Actions of won episodes, free / guided and their ratio, in one window."""
    ag, _ = _seed_mean(runs, "train/actions_when_won_guided", first)
    af, _ = _seed_mean(runs, "train/actions_when_won_free", first)
    return f"{fmt(af, 1)} / {fmt(ag, 1)} = {fmt(af / ag)}x" if ag == ag and ag else "n/a"


def _eval_at(rows, key: str, last: bool) -> float:
    values = series(rows, key)
    if not values:
        return float("nan")
    return values[-1] if last else values[0]


def _heldout(runs: dict) -> str:
    """Held-out success without / with experience at the first and the last
    evaluation, means over seeds: whether reading pays on games the RL pool
    never had (the oracle gives them their own plan too)."""
    def at(key, last):
        vals = [_eval_at(rows, key, last) for _, rows in sorted(runs.items())]
        vals = [v for v in vals if v == v]
        return float(np.mean(vals)) if vals else float("nan")

    def pair(last):
        no, w = at("eval_no_exp/success", last), at("eval_with_exp/success", last)
        return fmt(no) + ("" if w != w else f" / {fmt(w)}")
    return f"{pair(False)} -> {pair(True)}"


def preset_figure(preset: str, budget: str, root: str, out_dir: str, notes: list,
                  variants=None, title: str = "") -> tuple:
    """Panels, table and arms of ``variants`` (the budget's rungs by default;
    the last one is the no-experience reference) on ``preset``."""
    variants = variants or _plan(budget)[1]
    title = title or preset
    arms_here = variant_arms(preset, budget, variants)
    runs, more = common.load_runs(arms_here, root)
    notes += more
    panels = []
    for key, panel in (("train/success_guided", "guided episodes, training pool"),
                       ("train/success_free", "free episodes, training pool"),
                       ("eval_with_exp/success", "held-out games, with experience")):
        series = {}
        for v in variants:
            c = attempt(notes, f"{preset} {v.label} {key}", aggregate.seed_curves,
                        runs.get(v.label, {}), key) if runs.get(v.label) else None
            if c:
                series[v.label] = c
        panels.append({"title": f"{title}: {panel}", "ylabel": "success rate", "series": series})
    rows = []
    grpo = runs.get(variants[-1].label, {})
    for v in variants:
        mine = runs.get(v.label, {})
        seeds = ", ".join(str(s) for s in sorted(mine)) or "-"
        if not mine:
            cells = ["-", "-", "-"]
        elif v.mode == "none":  # every episode free: its training success, for scale
            cells = [f"{fmt(_seed_mean(mine, 'train/success', first)[0])} (all free)"
                     for first in (True, False)]
            cells.append(" -> ".join(fmt(_seed_mean(mine, "train/actions_when_won", first)[0], 1)
                                     for first in (True, False)) + " (all free)")
        else:
            cells = _cells(mine)
        rows.append([v.label, seeds, *cells, _whole_run_cell(mine, grpo),
                     _heldout(mine) if mine else "-"])
    table = {"caption": f"{title}: training success of guided / free episodes (difference; "
                        f"per seed), mean of the first and of the last {WINDOW} RL steps over "
                        "seeds; actions of won episodes, free / guided, first -> last steps. Goal "
                        "of the own plan: +0.15 or more, and 1.3x fewer actions. All steps: "
                        "training success (guided and free) over every RL step, seed mean "
                        "(per seed) and its ratio to GRPO's. Held-out: success on unseen games "
                        "without / with experience, first -> last evaluation.",
             "columns": ["arm", "seeds", f"first {WINDOW} steps", f"last {WINDOW} steps",
                         f"actions when won, free / guided, first -> last {WINDOW}", "all steps",
                         "held-out, no exp. / with"],
             "rows": rows}
    return panels, table, arms_here


def retagged(variants, tag: str, overrides: tuple) -> tuple:
    """``variants`` run with ``overrides`` too, labelled "<label>, <tag>"."""
    return tuple(Variant(f"{v.label}, {tag}", v.mode, (*v.extra, *overrides)) for v in variants)


def groups_arms(preset: str, budget: str, *groups) -> list:
    """The arms of each group of variants on ``preset`` (full budget only:
    none at the quick one)."""
    if budget == "quick":
        return []
    return [a for group in groups for a in variant_arms(preset, budget, group)]


def groups_figure(name: str, heading: str, plot_title: str, preset: str, budget: str, root: str,
                  out_dir: str, groups, more_tables=None) -> list[dict]:
    """One table (and three panels) per ``(variants, title)`` group of
    ``preset``, each set against the last variant of its own group (GRPO),
    then the tables ``more_tables(notes)`` returns, if given; nothing at the
    quick budget."""
    if budget == "quick":
        return []
    notes, panels, tables, every = [], [], [], []
    for variants, title in groups:
        p, t, a = preset_figure(preset, budget, root, out_dir, notes, variants, title)
        panels += p
        tables.append(t)
        every += a
    if more_tables is not None:
        tables += more_tables(notes)
    plots.plot_curves(os.path.join(out_dir, name), plot_title, panels)
    return [report(name, heading, out_dir, tables, notes, {}, every, root)]


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    notes, panels, tables, every = [], [], [], []
    for preset in _plan(budget)[0]:
        p, t, a = preset_figure(preset, budget, root, out_dir, notes)
        panels += p
        tables.append(t)
        every += a
    name = "oracle_ladder"
    plots.plot_curves(os.path.join(out_dir, name), "Oracle ladder: own-game plans as experience "
                      "(mean over seeds, band min..max)", panels)
    return [report(name, "Oracle ladder: does the actor read its experience?", out_dir, tables,
                   notes, {}, every, root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
