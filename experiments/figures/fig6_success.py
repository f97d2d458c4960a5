"""Fig. 6: success over training, Comp. RL vs the no-experience GRPO baseline
(paper: about 1.3x on MiniHack Room and ALFWorld), >= 3 seeds, mean and
min..max band. Fig. 7 (actions) reads the same runs.

    python experiments/figures/fig6_success.py --budget=quick
"""
from __future__ import annotations

import os
import sys


from experiments.figures import aggregate, common, plots, settings
from experiments.figures.ablation import WHOLE_RUN
from experiments.figures.script import attempt, figure_main, fmt_finals, fmt_ratio, report

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
    num = attempt(notes, f"{where} {num_label} {num_key}", aggregate.seed_finals,
                  runs.get(num_label, {}), num_key, last_k)
    den = attempt(notes, f"{where} {den_label} {den_key}", aggregate.seed_finals,
                  runs.get(den_label, {}), den_key, last_k)
    return num, den, (aggregate.ratio(num, den) if num and den else None)


def curve_panels(runs: dict, notes: list, title: str, train_key: str, eval_key: str,
                 ylabel: str) -> list[dict]:
    """Two panels: the training-batch metric and the held-out evaluation one
    (Comp. RL evaluated with and without test-time experience)."""
    train, held = {}, {}
    for label in (COMP, BASE):
        c = attempt(notes, f"{title} {label} {train_key}", aggregate.seed_curves,
                    runs.get(label, {}), train_key)
        if c:
            train[label] = c
    wanted = [(COMP + " (eval with exp.)", COMP, eval_key.replace("SPLIT", "eval_with_exp")),
              (COMP + " (eval without)", COMP, eval_key.replace("SPLIT", "eval_no_exp")),
              (BASE, BASE, eval_key.replace("SPLIT", "eval_no_exp"))]
    for shown, label, key in wanted:
        c = attempt(notes, f"{title} {shown} {key}", aggregate.seed_curves, runs.get(label, {}), key)
        if c:
            held[shown] = c
    return [{"title": f"{title}: training batch", "ylabel": ylabel, "series": train},
            {"title": f"{title}: held-out eval", "ylabel": ylabel, "series": held}]


def comparison_figure(root: str, budget: str, out_dir: str, *, name: str, heading: str,
                      curve_keys: tuple[str, str], ylabel: str, metrics, paper: dict,
                      caption: str, ratio_column: str, base_over_comp: bool = False) -> list[dict]:
    """Comp. RL vs the baseline on Fig. 6's runs: curve panels per environment
    and a table of final values. ``metrics`` rows are (what, Comp. RL key,
    baseline key, last K); the ratio is Comp. RL / baseline, or baseline /
    Comp. RL with ``base_over_comp``; the paper's value goes on the first row."""
    panels, rows, notes, ratios = [], [], [], {}
    for preset in presets(budget):
        title = ENV_TITLES[preset]
        runs, missing = common.load_runs(arms_for(preset, budget), root)
        notes += missing
        panels += curve_panels(runs, notes, title, *curve_keys, ylabel)
        for i, (what, comp_key, base_key, k) in enumerate(metrics):
            if base_over_comp:
                base_f, comp_f, r = compare(runs, notes, title, base_key, comp_key, k, BASE, COMP)
            else:
                comp_f, base_f, r = compare(runs, notes, title, comp_key, base_key, k)
            rows.append([title, what, fmt_finals(comp_f), fmt_finals(base_f), fmt_ratio(r),
                         paper[preset] if i == 0 else ""])
            ratios[f"{preset}/{what}"] = r
    plots.plot_curves(os.path.join(out_dir, name),
                      f"{heading} (mean over seeds, band min..max)", panels, cols=2)
    table = {"caption": caption, "columns": ["env", "metric", COMP, BASE, ratio_column, "paper"],
             "rows": rows}
    return [report(name, heading, out_dir, [table], notes, ratios, arms(budget), root)]


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return comparison_figure(
        root, budget, out_dir, name=NAME, heading="Fig. 6: success over training",
        curve_keys=("train/success", "SPLIT/success"), ylabel="success rate",
        metrics=(("train success", "train/success", "train/success", TRAIN_LAST_K),
                 ("train success, all steps", "train/success", "train/success", WHOLE_RUN[1]),
                 ("eval success, no exp. at test", "eval_no_exp/success", "eval_no_exp/success",
                  EVAL_LAST_K),
                 ("eval success, Comp. RL with exp.", "eval_with_exp/success",
                  "eval_no_exp/success", EVAL_LAST_K)),
        paper=PAPER_SUCCESS_RATIO,
        caption=f"Final success (train: mean of the last {TRAIN_LAST_K} steps, and of every "
                f"RL step; eval: last evaluation). Cells: mean [min, max] over seeds.",
        ratio_column="Comp. RL / Baseline")


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
