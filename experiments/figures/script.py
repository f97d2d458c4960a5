"""What every figure script shares: the stand-alone command line, the report
record a script returns, and number formatting for its tables.

A figure module defines ``arms(budget) -> list[Arm]`` and
``make(root, budget, out_dir) -> list[dict]`` (one report per output) and ends with
``if __name__ == "__main__": figure_main(sys.modules[__name__])``.
"""
from __future__ import annotations

import math
import os
from typing import Callable

from experiments.figures import common


def fmt(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}f}"


def fmt_finals(f: dict | None, digits: int = 2) -> str:
    """'mean [min, max]' of seed_finals (just the mean for one seed)."""
    if not f:
        return "n/a"
    if f["n"] == 1:
        return fmt(f["mean"], digits)
    return f"{fmt(f['mean'], digits)} [{fmt(f['min'], digits)}, {fmt(f['max'], digits)}]"


def fmt_ratio(r: dict | None) -> str:
    """'ratio of means (per-seed mean [min, max])'; when one side has seeds
    the other lacks, the ratio over the seeds both have, saying which."""
    if not r:
        return "n/a"
    paired = list(r["per_seed"])
    if paired and len(paired) < max(r["num_seeds"], r["den_seeds"]):
        return (f"{fmt(r['paired_ratio_of_means'])}x (seed{'s' * (len(paired) > 1)} "
                f"{', '.join(paired)} only, the seeds both have)")
    if r["finite_seeds"] > 1:
        return f"{fmt(r['ratio_of_means'])}x (per seed {fmt(r['mean'])} [{fmt(r['min'])}, {fmt(r['max'])}])"
    return f"{fmt(r['ratio_of_means'])}x"


def attempt(notes: list, what: str, fn: Callable, *args, **kw):
    """fn(*args, **kw), or None with a note when the data for it is missing."""
    try:
        return fn(*args, **kw)
    except (KeyError, ValueError) as err:
        notes.append(f"{what}: {err}")
        return None


def report(name: str, title: str, out_dir: str, tables: list, notes: list,
           ratios: dict | None = None, arms=(), root: str = "") -> dict:
    """The record reproduce.py turns into a section of docs/RESULTS.md."""
    arms = common.dedupe_arms(arms)
    ran = [a for a in arms  # the runs drawn, not every seed the budget plans (nor a stale run)
           if not root or (os.path.exists(os.path.join(common.run_dir(a, root), common.METRICS))
                           and not common.stale_settings(a, common.run_dir(a, root)))]
    return {"name": name, "title": title, "png": os.path.join(out_dir, name + ".png"),
            "json": os.path.join(out_dir, name + ".json"), "tables": tables,
            "notes": list(dict.fromkeys(notes)),  # panels that share an arm note it once
            "ratios": ratios or {}, "seeds": sorted({a.seed for a in ran}),
            "drawn": [a.run_name for a in ran],
            "runs": [{"label": a.label, "preset": a.preset, "seed": a.seed,
                      "overrides": list(a.overrides), "run": a.run_name,
                      "wall_s": common.load_record(a, root).get("wall_s")} for a in arms]}


def figure_main(module) -> None:
    """Stand-alone entry point: run the module's missing arms, then draw it."""
    from absl import app, flags

    flags.DEFINE_enum("budget", "quick", list(common.BUDGETS), "run budget")
    flags.DEFINE_string("root", "", "directory of the run directories (default: the budget's, "
                        "experiments/figures/runs for full, runs/quick/runs for quick)")
    flags.DEFINE_string("out", "", "where the PNG and JSON go (default: the budget's, "
                        "experiments/figures/out for full, runs/quick/out for quick)")
    flags.DEFINE_bool("skip_runs", False, "only draw from the runs that exist")
    flags.DEFINE_bool("redraw", False, "replace a committed figure even when some of the runs "
                      "it drew have no record here")
    flags.DEFINE_float("timeout_s", None, "wall-clock limit per arm")
    flags.DEFINE_integer("jobs", 1, "arms run at once (each is its own process)")
    FLAGS = flags.FLAGS

    def main(argv):
        del argv
        from experiments.figures.publish import draw_and_publish, place
        root, out = place(FLAGS.budget, FLAGS.root, "root"), place(FLAGS.budget, FLAGS.out, "out")
        arms = module.arms(FLAGS.budget)
        if not FLAGS.skip_runs:
            from experiments.figures.sweep import run_arms
            run_arms(arms, root, FLAGS.timeout_s, jobs=FLAGS.jobs)
        for rep in draw_and_publish(lambda d: module.make(root, FLAGS.budget, d), out,
                                    FLAGS.redraw):
            if rep.get("kept"):
                continue  # publish said why
            print(f"wrote {rep['png']} and {rep['json']}")
            for note in rep["notes"]:
                print("  note:", note)

    app.run(main)
