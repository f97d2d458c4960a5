"""Fig. 7: actions per episode over training for Fig. 6's runs (paper: 1.5x
fewer on MiniHack Room, 2x fewer on ALFWorld with Comp. RL). A failed episode
runs to the turn cap, so actions also track success: actions_when_won
(successful episodes only) is reported beside it.

    python experiments/figures/fig7_actions.py --budget=quick --root=runs/figures
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from experiments.figures import common, plots  # noqa: E402
from experiments.figures.fig6_success import (BASE, COMP, ENV_TITLES, TRAIN_LAST_K, EVAL_LAST_K,  # noqa: E402
                                              arms, arms_for, compare, curve_panels, presets)
from experiments.figures.script import figure_main, fmt_finals, fmt_ratio, report  # noqa: E402

NAME = "fig7_actions"
PAPER_FEWER = {"alfworld_cpu": "2x", "minihack_room_cpu": "1.5x", "webshop_cpu": "n/a"}


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    panels, rows, notes, ratios = [], [], [], {}
    for preset in presets(budget):
        title = ENV_TITLES[preset]
        runs, missing = common.load_runs(arms_for(preset, budget), root)
        notes += missing
        panels += curve_panels(runs, notes, title, "train/actions", "SPLIT/actions",
                               "actions per episode")
        for what, key, k in (("train actions", "train/actions", TRAIN_LAST_K),
                             ("train actions, won episodes", "train/actions_when_won", TRAIN_LAST_K),
                             ("eval actions, no exp. at test", "eval_no_exp/actions", EVAL_LAST_K)):
            # Baseline / Comp. RL: how many times fewer actions Comp. RL takes.
            base_f, comp_f, r = compare(runs, notes, title, key, key, k, BASE, COMP)
            rows.append([title, what, fmt_finals(comp_f), fmt_finals(base_f), fmt_ratio(r),
                         PAPER_FEWER[preset] if what == "train actions" else ""])
            ratios[f"{preset}/{what}"] = r
    stem = os.path.join(out_dir, NAME)
    plots.plot_curves(stem, "Fig. 7: actions per episode (mean over seeds, band min..max)", panels,
                      cols=2)
    table = {"caption": "Final actions per episode; last column: Baseline / Comp. RL "
                        "(above 1 = Comp. RL takes fewer actions).",
             "columns": ["env", "metric", COMP, BASE, "Baseline / Comp. RL (fewer)", "paper"],
             "rows": rows}
    return [report(NAME, "Fig. 7: actions per episode", out_dir, [table], notes, ratios,
                   arms(budget), root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
