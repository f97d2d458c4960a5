"""Fig. 9: (a) a larger extractor (paper: about +5%); (b) self-distillation
(helps early, then collapses); (c) rollout latency with and without the
experience pipeline at increasing batch sizes (paper: unchanged at 128-1024);
(d) task scaling, Comp. RL's gain over the baseline on 3 and 6 tasks (paper:
+6.6% and +8.1%).

The 6-task mixture at CPU scale is multitask3_cpu with env.names set to the
paper's six environments (no CPU preset of its own). Latency comes from short
runs at several train.tasks_per_step: the mean time/rollout of their steps
after the first (which compiles).

    python experiments/figures/fig9.py --budget=quick
"""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np


from experiments.figures import common, plots, settings
from experiments.figures.ablation import Variant, variant_arms, variant_figure
from experiments.figures.fig6_success import BASE, COMP, compare
from experiments.figures.script import figure_main, fmt, fmt_finals, fmt_ratio, report

PRESET = "minihack_room_cpu"
LARGER = ("extractor.hidden_size=256", "extractor.num_layers=4", "extractor.intermediate_size=768")
EXTRACTOR = (Variant(COMP), Variant(COMP + " + larger extractor", extra=LARGER, paper="about +5%"),
             Variant(BASE, "none"))
SELF_DISTILL = (Variant(COMP), Variant(COMP + " + self-distillation",
                                       extra=("experience.self_distillation=0.5",),
                                       paper="helps early, then collapses"),
                Variant(BASE, "none"))
SIX_TASKS = ("env.names=MiniHack-Room-Ultimate-5x5-v0,webshop,alfworld,"
             "MiniHack-MazeWalk-9x9-v0,MiniHack-KeyRoom-Dark-S5-v0,sokoban",)
PAPER_GAIN = {"3 tasks": "+6.6%", "6 tasks": "+8.1%"}
LATENCY_STEPS = 3  # step 1 compiles the sampler; steps 2.. are timed


def latency_batches(budget: str) -> tuple[int, ...]:
    return (2, 8) if settings.check_budget(budget) == "quick" else (2, 4, 8, 16)


def latency_arms(budget: str) -> list[common.Arm]:
    out = []
    for tasks in latency_batches(budget):
        extra = (f"train.tasks_per_step={tasks}", "train.group_size=4",
                 f"train.steps={LATENCY_STEPS}", "train.eval_every=0", "train.checkpoint_every=0",
                 "warm_start.demos=8", "warm_start.actor_steps=2", "warm_start.extractor_steps=2",
                 "experience.extractor_train_after=1", "experience.bank.train_batch_size=8")
        for mode, label in (("comp_rl", "with experience pipeline"), ("none", "without")):
            arm = settings.make_arm(f"{label} @ {tasks * 4}", PRESET, budget, extra, 0, mode)
            out.append(dataclasses.replace(arm, alone=True))  # a parallel sweep would skew its timing
    return out


def scaling_arms(budget: str) -> dict[str, list[common.Arm]]:
    seeds = settings.seeds(budget, "ablation")
    return {"3 tasks": variant_arms("multitask3_cpu", budget,
                                    (Variant(BASE, "none"), Variant(COMP))),
            "6 tasks": [settings.make_arm(label, "multitask3_cpu", budget, SIX_TASKS, s, mode)
                        for label, mode in ((BASE, "none"), (COMP, "comp_rl")) for s in seeds]}


def arms(budget: str) -> list[common.Arm]:
    return (variant_arms(PRESET, budget, EXTRACTOR) + variant_arms(PRESET, budget, SELF_DISTILL)
            + latency_arms(budget) + [a for v in scaling_arms(budget).values() for a in v])


def make_latency(root: str, budget: str, out_dir: str) -> dict:
    arms_ = latency_arms(budget)
    runs, notes = common.load_runs(arms_, root)
    series: dict[str, dict] = {}
    rows = []
    for arm in arms_:
        name, _, batch = arm.label.partition(" @ ")
        rows_ = runs.get(arm.label, {}).get(arm.seed)
        timed = [r["time/rollout"] for r in rows_ or [] if r["step"] >= 2 and "time/rollout" in r]
        if not timed:
            notes.append(f"{arm.label}: no timed step after the first")
            continue
        s = series.setdefault(name, {"x": [], "y": []})
        s["x"].append(int(batch))
        s["y"].append(float(np.mean(timed)))
    by_batch = {}
    for name, s in series.items():
        for x, y in zip(s["x"], s["y"]):
            by_batch.setdefault(x, {})[name] = y
    for x in sorted(by_batch):
        w, wo = by_batch[x].get("with experience pipeline"), by_batch[x].get("without")
        rows.append([str(x), fmt(w), fmt(wo), fmt(w / wo) if w and wo else "n/a",
                     "unchanged (batch 128-1024)"])
    plots.plot_xy(os.path.join(out_dir, "fig9c_latency"),
                  "Fig. 9c: rollout time per step (mean of steps after the first)",
                  "episodes per step (tasks x group)", "seconds", series)
    table = {"caption": f"{PRESET}, untrained actor (every episode runs to the turn cap), "
                        f"seed 0. Seconds per rollout phase.",
             "columns": ["episodes / step", "with pipeline (s)", "without (s)", "ratio", "paper"],
             "rows": rows}
    return report("fig9c_latency", "Fig. 9c: rollout latency", out_dir, [table], notes,
                  {"seconds": by_batch}, arms_, root)


def make_scaling(root: str, budget: str, out_dir: str) -> dict:
    groups = scaling_arms(budget)
    panels, rows, notes, ratios = [], [], [], {}
    for name, arms_ in groups.items():
        runs, missing = common.load_runs(arms_, root)
        notes += missing
        short = [a for a in arms_ if (got := runs.get(a.label, {}).get(a.seed))
                 and common.is_short(a, got)]
        shown = name  # an unfinished run is named in the row itself, not only in the notes
        if short:
            shown = f"{name} (unfinished: {', '.join(sorted({a.label for a in short}))})"
        bars = {}
        for key, k in (("train/success", 3), ("eval_no_exp/success", 1)):
            num, den, r = compare(runs, notes, name, key, key, k)
            gain = (num["mean"] - den["mean"]) if num and den else None
            rows.append([shown, key, fmt_finals(num), fmt_finals(den),
                         f"{fmt(100 * gain, 1)} pts" if gain is not None else "n/a",
                         fmt_ratio(r), PAPER_GAIN[name]])
            ratios[f"{name}/{key}"] = r
            if key == "eval_no_exp/success":
                bars.update({lbl: f for lbl, f in ((COMP, num), (BASE, den)) if f})
        panels.append({"title": f"{shown}: final eval success", "ylabel": "success rate",
                       "bars": bars})
    plots.plot_bars(os.path.join(out_dir, "fig9d_task_scaling"),
                    "Fig. 9d: Comp. RL vs baseline on 3 and 6 tasks", panels)
    table = {"caption": "multitask3_cpu and its 6-environment mixture. Mean [min, max] over seeds.",
             "columns": ["mixture", "metric", COMP, BASE, "gain", "Comp. RL / Baseline", "paper"],
             "rows": rows}
    all_arms = [a for v in groups.values() for a in v]
    return report("fig9d_task_scaling", "Fig. 9d: task scaling", out_dir, [table], notes,
                  ratios, all_arms, root)


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return [variant_figure("fig9a_extractor", "Fig. 9a: a larger extractor", PRESET, budget, root,
                           out_dir, EXTRACTOR, COMP),
            variant_figure("fig9b_self_distillation", "Fig. 9b: self-distillation", PRESET, budget,
                           root, out_dir, SELF_DISTILL, COMP),
            make_latency(root, budget, out_dir), make_scaling(root, budget, out_dir)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
