"""The extractor's entries through RL (not a figure of the paper):
does training the extractor on r(m) make its entries better? Comp. RL
against Static Online Exp., whose extractor is the same warm start kept
fixed (the control: what the entries would be without the extractor's RL),
on ALFWorld and MiniHack Room, 3 seeds, each seed its own warm start shared
by its two arms (they are Fig. 3 left's runs).

Two measures per run (crl_jax/training/entry_tracking.py): at each
evaluation, the extractor's greedy entry for each pool game's latest won
trajectory against the game's true plan (pool step F1: what the extractor
can write), and for the guided training episodes of each step, the step F1
of the entry they read against their own game's plan (what retrieval brings
the actor). The table gives each seed's CISPO updates, the pool F1 at the
first and last evaluation and its rise (the study's bar: +0.1, and more than
Static Online's), its exact-plan share, and the read entries' F1 over the
first and last 5 steps. The pool F1 of different evaluations scores
different trajectories (each game's latest won one); where the run's record
holds experiments/diagnostics/extractor_rl_gain.py's result, the table also gives the
warm-started and the trained extractor on the same inputs, which isolates
what the extractor's RL changed.

    python experiments/figures/reproduce.py --budget=full --only=entry_quality --jobs=2

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np


from experiments.figures import aggregate, common, plots
from experiments.figures.ablation import Variant, variant_arms
from experiments.figures.fig6_success import COMP
from experiments.figures.script import attempt, figure_main, fmt, report
from crl_jax.training.run_summary import series

PRESETS = (("alfworld_cpu", "ALFWorld"), ("minihack_room_cpu", "MiniHack Room"))
STATIC = "Static Online Exp. (fixed extractor)"
VARIANTS = (Variant(STATIC, "static_online"), Variant(COMP))
POOL_F1, READ_F1 = "extractor/pool_step_f1", "train/entry_step_f1"


def arms(budget: str):
    # the quick budget's hour has no room for more runs: arms_for gives none
    return [a for preset, _ in PRESETS for a in arms_for(preset, budget)]


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def quality_row(rows) -> dict:
    """One run's entry quality: CISPO updates over the run (0 for a fixed
    extractor), pool step F1 and exact share at the first and last
    evaluation, and the step F1 of the entries guided episodes read, mean
    over the first and last 5 steps that had guided episodes."""
    f1, exact = series(rows, POOL_F1), series(rows, "extractor/pool_exact")
    read = series(rows, READ_F1)
    nan = float("nan")
    return {"updates": int(sum(series(rows, "extractor/updates"))),
            "f1 first": f1[0] if f1 else nan, "f1 last": f1[-1] if f1 else nan,
            "rise": f1[-1] - f1[0] if f1 else nan,
            "exact first": exact[0] if exact else nan, "exact last": exact[-1] if exact else nan,
            "read first 5": _mean(read[:5]), "read last 5": _mean(read[-5:])}


def arms_for(preset: str, budget: str):
    return [] if budget == "quick" else variant_arms(preset, budget, VARIANTS)


def paired_cells(directory: str) -> list[str]:
    """The run's extractor_rl_gain.json (experiments/diagnostics/extractor_rl_gain.py)
    as two cells, pool and held-out step F1 "warm -> trained"; "-" when it
    was not measured."""
    path = os.path.join(directory, common.RL_GAIN)
    if not os.path.exists(path):
        return ["-", "-"]
    with open(path) as f:
        gain = json.load(f)
    return [f"{fmt(gain[k]['warm']['step_f1'])} -> {fmt(gain[k]['rl']['step_f1'])} "
            f"({gain[k]['rl']['games']})" for k in ("pool", "held_out")]


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    if budget == "quick":
        return []
    panels, rows, notes = [], [], []
    for preset, title in PRESETS:
        dirs = {(a.label, a.seed): common.run_dir(a, root) for a in arms_for(preset, budget)}
        runs, missing = common.load_runs(arms_for(preset, budget), root)
        notes += [f"{title}: {m}" for m in missing]
        pool, read = {}, {}
        for v in VARIANTS:
            got = runs.get(v.label, {})
            if not got:
                continue
            c = attempt(notes, f"{title} {v.label} {POOL_F1}", aggregate.seed_curves, got, POOL_F1)
            if c:
                pool[v.label] = c
            c = attempt(notes, f"{title} {v.label} {READ_F1}", aggregate.seed_curves, got, READ_F1)
            if c:
                read[v.label] = c
            for seed in sorted(got):
                q = quality_row(got[seed])
                rows.append([title, v.label, str(seed), str(q["updates"]), fmt(q["f1 first"]),
                             fmt(q["f1 last"]), fmt(q["rise"]), fmt(q["exact first"]),
                             fmt(q["exact last"]), fmt(q["read first 5"]), fmt(q["read last 5"]),
                             *paired_cells(dirs[(v.label, seed)])])
        panels += [{"title": f"{title}: pool step F1 (greedy entry vs true plan)",
                    "ylabel": "step F1", "series": pool},
                   {"title": f"{title}: step F1 of the entries guided episodes read",
                    "ylabel": "step F1", "series": read}]
    if any(p["series"] for p in panels):
        plots.plot_curves(os.path.join(out_dir, "entry_quality"),
                          "The extractor's entries through RL (mean over seeds, band min..max)",
                          panels, cols=2)
    table = {"caption": "Per seed. Updates: the extractor's CISPO updates over the run; pool F1 / "
                        "exact: its greedy entries for the pool games' latest won trajectories "
                        "against their true plans (plan-step F1, share exactly right), at the "
                        "first and last evaluation; read F1: step F1 of the entries guided "
                        "training episodes read against their own game's plan, mean over the "
                        "first and last 5 steps; same inputs, warm -> trained: the warm-started "
                        "extractor and the run's last checkpoint on the checkpoint's pool "
                        "trajectories and on won expert games of held-out tasks (games in "
                        "brackets; `python experiments/diagnostics/extractor_rl_gain.py --runs=RUN_DIR`, "
                        "'-': not measured).",
             "columns": ["preset", "arm", "seed", "updates", "pool F1 first", "pool F1 last",
                         "rise", "exact first", "exact last", "read F1 first 5",
                         "read F1 last 5", "same inputs: pool F1", "same inputs: held-out F1"],
             "rows": rows}
    return [report("entry_quality", "The extractor's entries through RL (Comp. RL against a "
                   "fixed extractor)", out_dir, [table], notes, {}, arms(budget), root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
