"""Fig. 6: success over training, Comp. RL vs the no-experience GRPO baseline
(paper: about 1.3x on MiniHack Room and ALFWorld), >= 3 seeds, mean and
min..max band. Fig. 7 (actions) reads the same runs.

    python experiments/figures/fig6_success.py --budget=quick --root=runs/figures
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from experiments.figures import common, plots, settings  # noqa: E402
from experiments.figures.script import attempt, figure_main, fmt_finals, fmt_ratio, report  # noqa: E402

NAME = "fig6_success"
ENV_TITLES = {"alfworld_cpu": "ALFWorld", "minihack_room_cpu": "MiniHack Room",
              "webshop_cpu": "WebShop"}
PAPER_SUCCESS_RATIO = {"alfworld_cpu": "~1.3x", "minihack_room_cpu": "~1.3x", "webshop_cpu": "n/a"}
COMP, BASE = "Comp. RL", "Baseline (GRPO)"
TRAIN_LAST_K, EVAL_LAST_K = 3, 1  # final value = mean of the last K points that carry the key


def presets(budget: str) -> tuple[str, ...]:
    settings.check_budget(budget)
    return (("alfworld_cpu", "minihack_room_cpu") if budget == "quick"
            else ("alfworld_cpu", "minihack_room_cpu", "webshop_cpu"))


def arms_for(preset: str, budget: str) -> list[common.Arm]:
    comp, base = settings.comp_and_baseline(preset, budget, settings.seeds(budget, "main"),
                                            COMP, BASE)
    return comp + base


def arms(budget: str) -> list[common.Arm]:
    return [a for p in presets(budget) for a in arms_for(p, budget)]


def compare(runs: dict, notes: list, where: str, num_key: str, den_key: str, last_k: int,
            num_label: str = COMP, den_label: str = BASE):
    """(finals of num, finals of den, num/den) for two labels' metric keys."""
    num = attempt(notes, f"{where} {num_label} {num_key}", common.seed_finals,
                  runs.get(num_label, {}), num_key, last_k)
    den = attempt(notes, f"{where} {den_label} {den_key}", common.seed_finals,
                  runs.get(den_label, {}), den_key, last_k)
    return num, den, (common.ratio(num, den) if num and den else None)


def curve_panels(runs: dict, notes: list, title: str, train_key: str, eval_key: str,
                 ylabel: str) -> list[dict]:
    """Two panels: the training-batch metric and the held-out evaluation one
    (Comp. RL evaluated with and without test-time experience)."""
    train, held = {}, {}
    for label in (COMP, BASE):
        c = attempt(notes, f"{title} {label} {train_key}", common.seed_curves,
                    runs.get(label, {}), train_key)
        if c:
            train[label] = c
    wanted = [(COMP + " (eval with exp.)", COMP, eval_key.replace("SPLIT", "eval_with_exp")),
              (COMP + " (eval without)", COMP, eval_key.replace("SPLIT", "eval_no_exp")),
              (BASE, BASE, eval_key.replace("SPLIT", "eval_no_exp"))]
    for shown, label, key in wanted:
        c = attempt(notes, f"{title} {shown} {key}", common.seed_curves, runs.get(label, {}), key)
        if c:
            held[shown] = c
    return [{"title": f"{title}: training batch", "ylabel": ylabel, "series": train},
            {"title": f"{title}: held-out eval", "ylabel": ylabel, "series": held}]


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    panels, rows, notes, ratios = [], [], [], {}
    for preset in presets(budget):
        title = ENV_TITLES[preset]
        runs, missing = common.load_runs(arms_for(preset, budget), root)
        notes += missing
        panels += curve_panels(runs, notes, title, "train/success", "SPLIT/success", "success rate")
        for what, nk, dk, k in (("train success", "train/success", "train/success", TRAIN_LAST_K),
                                ("eval success, no exp. at test", "eval_no_exp/success",
                                 "eval_no_exp/success", EVAL_LAST_K),
                                ("eval success, Comp. RL with exp.", "eval_with_exp/success",
                                 "eval_no_exp/success", EVAL_LAST_K)):
            num, den, r = compare(runs, notes, title, nk, dk, k)
            rows.append([title, what, fmt_finals(num), fmt_finals(den), fmt_ratio(r),
                         PAPER_SUCCESS_RATIO[preset] if what == "train success" else ""])
            ratios[f"{preset}/{what}"] = r
    stem = os.path.join(out_dir, NAME)
    plots.plot_curves(stem, "Fig. 6: success over training (mean over seeds, band min..max)", panels,
                      cols=2)
    table = {"caption": f"Final success (train: mean of the last {TRAIN_LAST_K} steps; eval: "
                        f"last evaluation). Cells: mean [min, max] over seeds.",
             "columns": ["env", "metric", COMP, BASE, "Comp. RL / Baseline", "paper"],
             "rows": rows}
    return [report(NAME, "Fig. 6: success over training", out_dir, [table], notes, ratios,
                   arms(budget), root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
