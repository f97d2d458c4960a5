"""A figure of named variants of one preset (pilot, ablations, SDAE, Fig. 9a/b):
curves of success over training per variant, and a table of final values
with each variant's ratio to a reference variant."""
from __future__ import annotations

import dataclasses
import os
from typing import Sequence

from experiments.figures import aggregate, common, plots, settings
from experiments.figures.script import attempt, fmt_finals, fmt_ratio, report

# Metrics only a run with experience has.
EXPERIENCE_KEYS = ("eval_with_exp", "eval_unseen_with_exp", "train/entry_", "extractor/",
                   "lessons/")
# (metric key, how many last points make its final value, column title)
FINALS = (("train/success", 3, "train success"),
          ("eval_no_exp/success", 1, "eval, no exp."),
          ("eval_with_exp/success", 1, "eval, with exp."))
# Training success over every RL step (a last_k past any run's length): a run
# ahead for most of training and caught up at its end shows here, not in the
# last steps.
WHOLE_RUN = ("train/success", 10**6, "train success, all steps")


@dataclasses.dataclass(frozen=True)
class Variant:
    label: str
    mode: str = "comp_rl"  # experience.mode
    extra: tuple[str, ...] = ()  # further overrides
    paper: str = ""  # what the paper reports for it


def variant_arms(preset: str, budget: str, variants: Sequence[Variant],
                 kind: str = "ablation") -> list[common.Arm]:
    """Each variant's arm per seed; a variant that only the tiny models can
    run has none at the paper budget (settings.CpuOnlyVariant)."""
    out = []
    for v in variants:
        try:
            out += [settings.make_arm(v.label, preset, budget, v.extra, s, v.mode)
                    for s in settings.seeds(budget, kind)]
        except settings.CpuOnlyVariant:
            continue
    return out


def variant_figure(name: str, title: str, preset: str, budget: str, root: str, out_dir: str,
                   variants: Sequence[Variant], reference: str, kind: str = "ablation",
                   finals=FINALS) -> dict:
    """Draws <out_dir>/<name>.png/.json and returns its report."""
    arms = variant_arms(preset, budget, variants, kind)
    runs, notes = common.load_runs(arms, root)
    panels, ratios = [], {}
    for key, _, col in finals:
        series = {}
        for v in variants:
            if v.mode == "none" and key.startswith(EXPERIENCE_KEYS):
                continue  # a no-experience run has no with-experience evaluation
            c = attempt(notes, f"{v.label} {key}", aggregate.seed_curves, runs.get(v.label, {}), key)
            if c:
                series[v.label] = c
        panels.append({"title": col, "ylabel": "success rate", "series": series})
    ref_key, ref_k, ref_col = finals[0]
    ref = attempt(notes, f"reference {reference}", aggregate.seed_finals,
                  runs.get(reference, {}), ref_key, ref_k)
    rows = []
    for v in variants:
        cells = []
        mine = None
        for key, k, _ in finals:
            if v.mode == "none" and key.startswith(EXPERIENCE_KEYS):
                cells.append("-")
                continue
            f = attempt(notes, f"{v.label} {key}", aggregate.seed_finals, runs.get(v.label, {}), key, k)
            cells.append(fmt_finals(f))
            if (key, k) == (ref_key, ref_k):  # WHOLE_RUN shares the key, not the window
                mine = f
        r = aggregate.ratio(mine, ref) if mine and ref else None
        ratios[v.label] = r
        seeds = ", ".join(str(x) for x in sorted(runs.get(v.label, {}))) or "-"
        rows.append([v.label, seeds, *cells, fmt_ratio(r), v.paper])
    plots.plot_curves(os.path.join(out_dir, name), f"{title} ({preset}; mean over seeds, "
                      f"band min..max)", panels)
    table = {"caption": f"{preset}. Final values: mean [min, max] over seeds; ratio of "
                        f"{ref_col} to {reference!r}.",
             "columns": ["variant", "seeds", *(c for _, _, c in finals), f"/ {reference}", "paper"],
             "rows": rows}
    return report(name, title, out_dir, [table], notes, ratios, arms, root)


def full_budget_variant_script(figures: Sequence[tuple[str, str]], title: str,
                               variants: Sequence[Variant], reference: str, finals=FINALS):
    """The (arms, make) pair of variant figures run on the full budget only
    (the quick budget's hour has no room for their runs): nothing in quick.
    ``figures``: (figure name, preset) per figure, the same variants in each."""
    def arms(budget: str) -> list[common.Arm]:
        if budget == "quick":
            return []
        return [a for _, preset in figures for a in variant_arms(preset, budget, variants)]

    def make(root: str, budget: str, out_dir: str) -> list[dict]:
        if budget == "quick":
            return []
        return [variant_figure(name, title, preset, budget, root, out_dir, variants, reference,
                               finals=finals) for name, preset in figures]
    return arms, make
