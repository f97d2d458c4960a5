"""Table 1: the 3-task mixture (MiniHack Room, WebShop, ALFWorld), final
evaluation on held-out tasks with and without test-time experience, for
Baseline, Static Online Exp., Exp. Only and Comp. RL.

Per-environment columns need per-environment evaluation keys
(``eval_with_exp/<env>/success``); where the run logged only the mixture's
``eval_with_exp/success`` the environment cells say so and "avg" is the
mixture's (equal eval tasks per environment, so the same average).

    python experiments/figures/table1_multitask.py --budget=quick
"""
from __future__ import annotations

import os
import sys


from experiments.figures import aggregate, common, plots
from experiments.figures.ablation import WHOLE_RUN, Variant, variant_arms
from experiments.figures.script import attempt, figure_main, fmt, fmt_finals, fmt_ratio, report

NAME = "table1_multitask"
PRESET = "multitask3_cpu"
ENVS = (("MiniHack-Room-Ultimate-5x5-v0", "MiniHack Room"), ("webshop", "WebShop"),
        ("alfworld", "ALFWorld"))
VARIANTS = (Variant("Baseline", "none"), Variant("Static Online Exp.", "static_online"),
            Variant("Exp. Only", "exp_only"), Variant("Comp. RL"))
# (row, variant label, evaluation prefix, paper: MiniHack, WebShop, ALFWorld, avg)
ROWS = (("Baseline", "Baseline", "eval_no_exp", (0.68, 0.81, 0.72, 0.75)),
        ("Static Online Exp. (eval with exp.)", "Static Online Exp.", "eval_with_exp",
         (0.41, 0.67, 0.69, 0.59)),
        ("Static Online Exp. (eval without)", "Static Online Exp.", "eval_no_exp",
         (0.39, 0.59, 0.64, 0.54)),
        ("Exp. Only (actor frozen, eval with exp.)", "Exp. Only", "eval_with_exp",
         (0.49, 0.37, 0.13, 0.33)),
        ("Comp. RL (eval with exp.)", "Comp. RL", "eval_with_exp", (0.78, 0.87, 0.82, 0.82)),
        ("Comp. RL (eval without)", "Comp. RL", "eval_no_exp", (0.75, 0.84, 0.74, 0.78)))
LAST_K = 1  # the final evaluation
# Training success over the mixture (the runs log no per-environment training
# keys): the first steps, the last ones, and the whole run, whose mean is the
# steadier measure at 48 episodes a step.
TRAIN_WINDOWS = (("first 5 steps", 5, True), ("last 3 steps", 3, False),
                 ("all steps", WHOLE_RUN[1], False))


def arms(budget: str):
    return variant_arms(PRESET, budget, VARIANTS)


def cell(runs: dict, label: str, key: str, notes: list):
    return attempt(notes, f"{label} {key}", aggregate.seed_finals, runs.get(label, {}), key, LAST_K)


def per_seed(f: dict | None) -> str:
    if not f:
        return "n/a"
    return ", ".join(fmt(f["per_seed"][s]) for s in sorted(f["per_seed"], key=int))


def training_table(runs: dict, notes: list) -> tuple[dict, dict]:
    """Training success per method: windows of train/success, per seed, and
    the whole run's ratio to the Baseline, paired by seed."""
    rows, numbers = [], {}
    key, whole_k, _ = WHOLE_RUN
    ref = attempt(notes, f"Baseline {key}", aggregate.seed_finals, runs.get("Baseline", {}), key,
                  whole_k)
    for v in VARIANTS:
        mine = runs.get(v.label, {})
        got = {col: attempt(notes, f"{v.label} {key} {col}", aggregate.seed_finals, mine, key, k,
                            first)
               for col, k, first in TRAIN_WINDOWS}
        whole = got["all steps"]
        r = aggregate.ratio(whole, ref) if whole and ref else None
        numbers[v.label] = {**got, "all steps / Baseline": r}
        rows.append([v.label, ", ".join(str(s) for s in sorted(mine)) or "-",
                     *(f"{fmt_finals(got[c])} ({per_seed(got[c])})" for c, _, _ in TRAIN_WINDOWS),
                     fmt_ratio(r)])
    table = {"caption": "Training success over the 3 environments (every episode, guided and "
                        "free), mean over seeds [min, max] (per seed); the whole run's ratio to "
                        "the Baseline.",
             "columns": ["method", "seeds", *(c for c, _, _ in TRAIN_WINDOWS),
                         "all steps / Baseline"], "rows": rows}
    return table, numbers


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    runs, notes = common.load_runs(arms(budget), root)
    rows, bars, numbers = [], {}, {}
    per_env_missing = False
    for row, label, prefix, paper in ROWS:
        cells, got = [], {}
        for env, _ in ENVS:
            key = f"{prefix}/{env}/success"
            if any(key in r for rs in runs.get(label, {}).values() for r in rs):
                got[env] = cell(runs, label, key, notes)
            else:
                got[env] = None
                per_env_missing = per_env_missing or label in runs
        avg = cell(runs, label, f"{prefix}/success", notes)
        got["avg"] = avg
        for (env, _), p in zip(ENVS, paper[:3]):
            ours = got[env]
            cells.append(f"{fmt(ours['mean']) if ours else 'n/a'} ({p:.2f})")
        cells.append(f"{fmt(avg['mean']) if avg else 'n/a'} ({paper[3]:.2f})")
        rows.append([row, *cells, per_seed(avg)])
        numbers[row] = got
        if avg:
            bars[row] = avg
    if per_env_missing:
        notes.append("the runs logged no per-environment evaluation keys "
                     "(eval_*/<env>/success): environment cells are n/a, avg is the mixture's")
    plots.plot_bars(os.path.join(out_dir, NAME), "Table 1: 3-task mixture, final held-out success",
                    [{"title": "average over the 3 environments", "ylabel": "success rate",
                      "bars": bars}])
    # Every arm of a seed shares its warm start, so the Baseline's step-0
    # evaluation is every method's starting point.
    start = {env: attempt(notes, f"warm start eval_no_exp/{env}/success", aggregate.seed_finals,
                          runs.get("Baseline", {}), f"eval_no_exp/{env}/success", 1, True)
             for env, _ in ENVS}
    start["avg"] = attempt(notes, "warm start eval_no_exp/success", aggregate.seed_finals,
                           runs.get("Baseline", {}), "eval_no_exp/success", 1, True)
    if start["avg"]:
        rows.insert(0, ["Warm start (step 0, every method)",
                        *(fmt(start[env]["mean"]) if start[env] else "n/a" for env, _ in ENVS),
                        fmt(start["avg"]["mean"]), per_seed(start["avg"])])
        numbers["warm start"] = start
    table = {"caption": "Final held-out success, ours (paper). Mean over seeds; the average's "
                        "per-seed values last.",
             "columns": ["method", *(t for _, t in ENVS), "avg", "avg per seed"], "rows": rows}
    train, numbers["training"] = training_table(runs, notes)
    rep = report(NAME, "Table 1: multi-task (3 tasks)", out_dir, [table, train], notes, {},
                 arms(budget), root)
    rep["numbers"] = numbers
    return [rep]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
