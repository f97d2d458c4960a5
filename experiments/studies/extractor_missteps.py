"""An extractor warm-started on the actor's kind of trajectory, not a figure
of the paper: Comp. RL on alfworld_cpu with
the preset's extractor warm start against one whose won demos are also
shown with one or two rejected actions in the trajectory, answered with the
clean game's plan (warm_start.extractor_missteps=0.5, crl_jax/training/
warmstart.with_missteps). Expert trajectories never hold a rejected action
and the actor's in RL do: sampled as in RL, the preset's warm-started
extractor answers 17% of such trajectories with malformed JSON
(`python experiments/diagnostics/extractor_quality.py --missteps=2 --temperature=1.0
--samples=4`). Per seed: malformed answers and why, answers cut at the cap,
the extractor's pool step F1 at the first and last evaluation, training
success (guided and free).

    python experiments/figures/reproduce.py --budget=full --only=extractor_missteps

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import os
import sys


from experiments.figures import aggregate, common, plots, settings
from experiments.figures.fig6_success import COMP
from experiments.figures.run_stats import run_summary
from experiments.figures.script import figure_main, fmt, report
from crl_jax.training.run_summary import series

PRESET = "alfworld_cpu"
WITHOUT = f"{COMP}, extractor warm start without missteps"
MISSTEPS = f"{COMP}, extractor warm start with missteps (the preset's since 2026-12-03)"
# The preset has the missteps since the figure was made: its "with" arm is
# Fig. 6's Comp. RL run, its "without" arm the setting turned off.
ARMS = ((WITHOUT, ("warm_start.extractor_missteps=0",)),
        (MISSTEPS, ("warm_start.extractor_missteps=0.5",)))


def arms(budget: str):
    if budget == "quick":  # the quick budget's hour has no room for more runs
        return []
    return [settings.make_arm(label, PRESET, budget, extra, s)
            for label, extra in ARMS for s in settings.seeds(budget, "ablation")]


def missteps_row(rows) -> dict:
    """One run's extractor answers: the malformed share (run_stats), the
    rejections by kind and the answers cut at the cap (0 when the run
    predates those counters: n/a), pool step F1 first and last, and training
    success over the last 5 steps, guided and free over the run."""
    summary = run_summary(rows)
    last = max(rows, key=lambda r: r["step"])
    kinds = {k.removeprefix("manager/rejected_"): int(v) for k, v in sorted(last.items())
             if k.startswith("manager/rejected_")}
    f1 = series(rows, "extractor/pool_step_f1")
    return {"malformed": summary["malformed"],
            "kinds": ", ".join(f"{k} {v}" for k, v in kinds.items()) if kinds else "n/a",
            "at cap": last.get("extractor/answers_at_cap", float("nan")),
            "f1 first": f1[0] if f1 else float("nan"), "f1 last": f1[-1] if f1 else float("nan"),
            "train last 5": summary["train last 5"], "guided": summary["guided"],
            "free": summary["free"]}


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    if budget == "quick":
        return []
    drawn = arms(budget)
    runs, notes = common.load_runs(drawn, root)
    curves, rows = {}, []
    for label, _ in ARMS:
        mine = runs.get(label, {})
        # an unfinished run may not have evaluated the pool yet
        scored = {s: got for s, got in mine.items()
                  if any("extractor/pool_step_f1" in r for r in got)}
        if scored:
            curves[label] = aggregate.seed_curves(scored, "extractor/pool_step_f1")
        for seed in sorted(mine):
            r = missteps_row(mine[seed])
            rows.append([label, str(seed), fmt(r["malformed"]), r["kinds"], fmt(r["at cap"], 0),
                         fmt(r["f1 first"]), fmt(r["f1 last"]), fmt(r["train last 5"]),
                         fmt(r["guided"]), fmt(r["free"])])
    if curves:
        plots.plot_curves(os.path.join(out_dir, "extractor_missteps"),
                          f"Extractor's pool entries through RL ({PRESET})",
                          [{"title": "pool step F1 (greedy entry vs true plan)",
                            "ylabel": "step F1", "series": curves}], cols=1)
    table = {"caption": f"{PRESET}, per seed. Malformed: share of the extractor's RL answers "
                        "with a rejected item, and the rejections by kind "
                        "(operations.rejection_kind); at cap: answers cut by the answer cap; "
                        "pool F1: its greedy entries for the pool games' latest won "
                        "trajectories against their true plans, first and last evaluation; "
                        "train: success over the last 5 steps; guided / free: over the run.",
             "columns": ["arm", "seed", "malformed", "rejections", "at cap", "pool F1 first",
                         "pool F1 last", "train last 5", "guided", "free"],
             "rows": rows}
    return [report("extractor_missteps", "Extractor warm start on the actor's kind of "
                   "trajectory (missteps)", out_dir, [table], notes, {}, drawn, root)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
