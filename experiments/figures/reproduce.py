"""Regenerates every figure and table of the paper at CPU scale, then docs/RESULTS.md.

    python experiments/figures/reproduce.py --budget=quick [--root=runs/figures] [--only=fig6,table1]
    python experiments/figures/reproduce.py --budget=full --dry_run   # arms and estimated time
    python experiments/figures/reproduce.py --budget=full --only=fig6,fig7 --presets=alfworld_cpu
    python experiments/figures/reproduce.py --budget=full --jobs=4 --seeds=0   # seed 0, 4 at a time

Arms of all scripts are collected and deduplicated (one run per preset,
overrides and seed), run one after another or --jobs at a time (finished
runs are skipped, unfinished ones resume from their checkpoint, runs made
with settings that have changed since are set aside and rerun), then every
script draws from the run directories.
"""
from __future__ import annotations

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from absl import app, flags  # noqa: E402

from experiments.figures import common, settings  # noqa: E402
from experiments.figures.results_doc import write_results  # noqa: E402
from experiments.figures.sweep import run_arms  # noqa: E402

SCRIPTS = ("fig3_pilot", "fig6_success", "fig7_actions", "table1_multitask", "fig9",
           "fig5_ablations", "sdae")
ALIASES = {"fig3": "fig3_pilot", "fig6": "fig6_success", "fig7": "fig7_actions",
           "table1": "table1_multitask", "fig5": "fig5_ablations"}

flags.DEFINE_enum("budget", "quick", list(common.BUDGETS), "run budget")
flags.DEFINE_string("root", common.DEFAULT_ROOT, "directory of the run directories")
flags.DEFINE_string("out", common.DEFAULT_OUT, "where the PNG and JSON go")
flags.DEFINE_string("results", os.path.join(common.REPO, "docs", "RESULTS.md"), "results document")
flags.DEFINE_list("only", [], f"scripts to make (default all): {', '.join(SCRIPTS)} or {sorted(ALIASES)}")
flags.DEFINE_list("presets", [], "run only the arms of these presets (e.g. alfworld_cpu); "
                  "figures still draw every arm that has a run directory")
flags.DEFINE_list("seeds", [], "run only the arms of these RL seeds (e.g. 0: one seed of every "
                  "arm first); figures still draw every arm that has a run directory")
flags.DEFINE_bool("skip_runs", False, "only draw from the runs that exist")
flags.DEFINE_bool("dry_run", False, "list the arms with their estimated time and stop")
flags.DEFINE_float("timeout_s", None, "wall-clock limit per arm")
flags.DEFINE_integer("jobs", 1, "arms run at once, each its own process (arms of one warm start "
                     "wait until the first has cached it); on 2 cores 2 jobs finished MiniHack "
                     "arms 1.1-1.3x sooner than 1 (measured); more cores take more")
FLAGS = flags.FLAGS


def modules(only) -> list:
    names = [ALIASES.get(n, n) for n in only] or list(SCRIPTS)
    bad = [n for n in names if n not in SCRIPTS]
    if bad:
        raise ValueError(f"unknown scripts {bad}; valid: {SCRIPTS} or {sorted(ALIASES)}")
    return [importlib.import_module(f"experiments.figures.{n}") for n in names]


def collect_arms(mods, budget: str) -> list[common.Arm]:
    return common.dedupe_arms(a for m in mods for a in m.arms(budget))


def keep_arms(arms: list[common.Arm], flag: str, wanted: list[str], value) -> list[common.Arm]:
    """The arms whose ``value(arm)`` is in ``wanted`` (all when it is empty);
    a wanted value no arm has is an error that lists the valid ones."""
    if not wanted:
        return arms
    known = sorted({value(a) for a in arms})
    bad = [w for w in wanted if w not in known]
    if bad:
        raise ValueError(f"--{flag} {bad} have no arms in these figures; valid: {known}")
    return [a for a in arms if value(a) in wanted]


def make_all(mods, root: str, budget: str, out_dir: str) -> list[dict]:
    return [rep for m in mods for rep in m.make(root, budget, out_dir)]


def main(argv):
    del argv
    mods = modules(FLAGS.only)
    arms = collect_arms(mods, FLAGS.budget)
    arms = keep_arms(arms, "presets", FLAGS.presets, lambda a: a.preset)
    arms = keep_arms(arms, "seeds", FLAGS.seeds, lambda a: str(a.seed))
    total_est = settings.sweep_estimate_s(arms)
    print(f"{len(arms)} runs, estimated {total_est / 60:.0f} min on 2 cores with shared warm "
          f"starts (budget {FLAGS.budget})")
    if FLAGS.dry_run:
        for a in arms:
            print(f"  {a.est_s / 60:5.1f} min alone  {a.run_name}  {a.label}  {' '.join(a.overrides)}")
        return
    start = time.perf_counter()
    if not FLAGS.skip_runs:
        run_arms(arms, FLAGS.root, FLAGS.timeout_s, jobs=FLAGS.jobs)
    reports = make_all(mods, FLAGS.root, FLAGS.budget, FLAGS.out)
    wall = time.perf_counter() - start
    cmd = " ".join(["python", "experiments/figures/reproduce.py", *sys.argv[1:]])
    write_results(FLAGS.results, reports, FLAGS.budget, cmd, wall,
                  sum(v for v in common.wall_times(arms, FLAGS.root).values() if v == v))
    print(f"wrote {FLAGS.results} ({len(reports)} figures) in {wall / 60:.1f} min")


if __name__ == "__main__":
    app.run(main)
