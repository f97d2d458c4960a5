"""How much the extractor trains under Comp. RL (not a figure of the paper):
a sweep of its CISPO updates on alfworld_cpu, seed 2 (the preset's Comp. RL
record with the entry-quality metrics).

With the preset's one update a step on batches of 32, the extractor makes
6-7 updates in 20 steps: its buffer gains ~2.5 rewarded samples a step (a
sample is rewarded once an entry it wrote guided an episode), so the first
batch of 32 is ready around step 14. Smaller batches are ready earlier, and
several a step use every rewarded sample once (Eq. 7 gives a sample drawn
again in the same step weight 0, so a batch takes only samples out of
their cooldown). The arms: the preset; up to 8 updates a step on batches of
8 at the preset's lr (1e-4), at 3e-4 and at 3e-5; up to 16 on batches of 4
at 3e-5 (ten times the preset's updates); and without Eq. 7's cooldown
(delta = 0: a sample may serve several updates of a step, its weight
(1 + c)^-0.5 falling with each); and the 8 updates with r(m) less the mean
outcome of the same task's free episodes (controls.reward_baseline=free:
credit for helping, not for an easy game). The table gives
each run's updates, their mean Eq. 7 weight, the share of malformed
answers, the extractor's pool step F1 at the first and last evaluation
(crl_jax/training/entry_tracking.py), training success and wall time.

    python experiments/figures/reproduce.py --budget=full --only=extractor_updates

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import os
import sys

import numpy as np


from experiments.figures import aggregate, common, plots, settings
from experiments.figures.ablation import WHOLE_RUN
from experiments.figures.fig6_success import COMP
from experiments.figures.run_stats import run_summary
from experiments.figures.script import figure_main, fmt, report
from crl_jax.training.run_summary import series

PRESET = "alfworld_cpu"
SEED = 2
SMALL = ("experience.extractor_updates_per_step=8", "experience.bank.train_batch_size=8")
ARMS = ((COMP + " (1 update a step, batch 32)", ()),
        ("up to 8 updates a step, batch 8", SMALL),
        ("up to 8 updates a step, batch 8, lr 3e-4", (*SMALL, "extractor_optim.lr=0.0003")),
        ("up to 8 updates a step, batch 8, no cooldown", (*SMALL, "experience.bank.cooldown_delta=0")),
        ("up to 8 updates a step, batch 8, r(m) less the free episodes' mean",
         (*SMALL, "controls.reward_baseline=free")),
        # Lower lr: whether the fall of the pool entries above comes from the
        # step size rather than the number of updates; and with batches of 4,
        # whether ten times the preset's updates can be had without collapse.
        ("up to 8 updates a step, batch 8, lr 3e-5", (*SMALL, "extractor_optim.lr=3e-05")),
        ("up to 16 updates a step, batch 4, lr 3e-5",
         ("experience.extractor_updates_per_step=16", "experience.bank.train_batch_size=4",
          "extractor_optim.lr=3e-05")))


# The sweep's arm with ten times the preset's updates, run on every seed
# beside the preset's Comp. RL: whether it holds beyond seed 2.
CHOSEN = "up to 16 updates a step, batch 4, lr 3e-5"
SEEDS = (0, 1, 2)


def arms(budget: str):
    if budget == "quick":  # the quick budget's hour has no room for more runs
        return []
    sweep = [settings.make_arm(label, PRESET, budget, extra, SEED) for label, extra in ARMS]
    others = [settings.make_arm(label, PRESET, budget, extra, s) for label, extra in ARMS
              if label in (ARMS[0][0], CHOSEN) for s in SEEDS if s != SEED]
    return sweep + others


def seeds_table(runs: dict) -> dict:
    """The preset's Comp. RL against CHOSEN, per seed."""
    rows = []
    for label in (ARMS[0][0], CHOSEN):
        for s in SEEDS:
            got = runs.get(label, {}).get(s)
            if not got:
                continue
            r = sweep_row(got)
            whole = aggregate.final_value(got, *WHOLE_RUN[:2])
            rows.append([label, str(s), str(r["updates"]), fmt(r["malformed"]), fmt(r["f1 first"]),
                         fmt(r["f1 last"]), fmt(r["train last 5"]), fmt(whole)])
    return {"caption": f"{PRESET}: the preset's Comp. RL and '{CHOSEN}' on every seed. Train "
                       "all steps: training success over the whole run.",
            "columns": ["arm", "seed", "updates", "malformed", "pool F1 first", "pool F1 last",
                        "train last 5", "train all steps"], "rows": rows}


def sweep_row(rows) -> dict:
    """One run's extractor training: run_stats' updates, malformed share and
    late training success, plus the updates' mean Eq. 7 weight, the pool
    step F1 at the first and last evaluation, and the seconds spent in
    extractor updates with their share of the run's wall time (a share,
    since runs beside each other slow each other down)."""
    summary = run_summary(rows)
    updates, weights = series(rows, "extractor/updates"), series(rows, "extractor/weight_mean")
    f1 = series(rows, "extractor/pool_step_f1")
    clock = series(rows, "time")
    update_s = sum(series(rows, "time/extractor_update"))
    return {"updates": summary["ext updates"],
            "weight": (float(np.dot(updates, weights) / sum(updates))
                       if updates and len(weights) == len(updates) else float("nan")),
            "first update": min((r["step"] for r in rows if r.get("extractor/updates")),
                                default=float("nan")),
            "malformed": summary["malformed"],
            "f1 first": f1[0] if f1 else float("nan"), "f1 last": f1[-1] if f1 else float("nan"),
            "train last 5": summary["train last 5"],
            "update s": update_s,
            "update share": update_s / max(1e-9, clock[-1] - clock[0]) if clock else float("nan")}


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    if budget == "quick":
        return []
    drawn = arms(budget)
    runs, notes = common.load_runs(drawn, root)
    series, rows = {}, []
    for arm in drawn:
        got = runs.get(arm.label, {}).get(SEED)
        if not got:
            continue
        if any("extractor/pool_step_f1" in r for r in got):
            series[arm.label] = aggregate.seed_curves({SEED: got}, "extractor/pool_step_f1")
        r = sweep_row(got)
        rows.append([arm.label, str(r["updates"]), fmt(r["weight"]), str(r["first update"]),
                     fmt(r["malformed"]), fmt(r["f1 first"]), fmt(r["f1 last"]),
                     fmt(r["f1 last"] - r["f1 first"]), fmt(r["train last 5"]),
                     fmt(r["update s"], 0), fmt(r["update share"])])
    if series:
        plots.plot_curves(os.path.join(out_dir, "extractor_updates"),
                          f"Extractor's pool entries through RL ({PRESET}, seed {SEED})",
                          [{"title": "pool step F1 (greedy entry vs true plan)",
                            "ylabel": "step F1", "series": series}], cols=1)
    table = {"caption": f"{PRESET}, seed {SEED}. Updates: CISPO updates over the run; weight: "
                        "their mean Eq. 7 weight; malformed: share of the extractor's answers; "
                        "pool F1: its greedy entries for the pool games' latest won trajectories "
                        "against their true plans, at the first and last evaluation; update s: seconds "
                        "in extractor updates over the run, and their share of its wall time.",
             "columns": ["arm", "updates", "weight", "first update", "malformed", "pool F1 first",
                         "pool F1 last", "rise", "train last 5", "update s", "share of run"],
             "rows": rows}
    return [report("extractor_updates", "Extractor updates under Comp. RL (sweep)", out_dir,
                   [table, seeds_table(runs)], notes, {}, drawn, root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
