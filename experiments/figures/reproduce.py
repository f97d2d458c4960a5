"""Regenerates every figure and table of the paper at CPU scale, then docs/RESULTS.md.

    python experiments/figures/reproduce.py --budget=quick [--only=fig6,table1]   # under runs/quick/
    python experiments/figures/reproduce.py --budget=full --dry_run   # arms and estimated time
    python experiments/figures/reproduce.py --budget=full --only=fig6,fig7 --presets=alfworld_cpu
    python experiments/figures/reproduce.py --budget=full --jobs=4 --seeds=0   # seed 0, 4 at a time
    python experiments/figures/reproduce.py --budget=full --runs=multitask3_cpu-s0-d9c1feb08b
    python experiments/figures/reproduce.py --budget=full --status   # what can be redrawn here

Arms of all scripts are collected and deduplicated (one run per preset,
overrides and seed), run one after another or --jobs at a time (finished
runs are skipped, unfinished ones resume from their checkpoint, runs made
with settings that have changed since are set aside and rerun), then every
script draws from the run directories.

Full-budget runs keep their records in experiments/figures/runs/ (committed,
see publish.py), so ``--budget=full --skip_runs`` on a fresh clone redraws
every figure; a figure is only replaced by a drawing with every run the
committed one drew (else it is kept, and the reason printed; --redraw
replaces it anyway). The quick budget writes under runs/quick/ only.
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import time


from absl import app, flags

from experiments.figures import common, settings
from experiments.figures.publish import (draft_dir, draw_and_publish, place, run_states,
                                         status_lines)
from experiments.figures import readme_block
from experiments.figures.results_doc import write_results
from experiments.figures.sweep import run_arms

# Every figure script, in the order RESULTS.md shows them. The studies live in
# experiments/studies/, the paper's figures beside this file.
SCRIPTS = ("oracle_ladder", "fig3_pilot", "fig6_success", "fig7_actions", "table1_multitask",
           "fig9", "fig5_ablations", "sdae", "retrieval", "actor_critic", "extractor_updates",
           "reward_baseline", "extractor_missteps", "entry_quality", "distrust", "regime",
           "households")
STUDIES = frozenset({"oracle_ladder", "retrieval", "extractor_updates", "reward_baseline",
                     "extractor_missteps", "entry_quality", "distrust", "regime", "households"})
PAPER_FIGURES = tuple(n for n in SCRIPTS if n not in STUDIES)
ALIASES = {"ladder": "oracle_ladder", "fig3": "fig3_pilot", "fig6": "fig6_success",
           "fig7": "fig7_actions", "table1": "table1_multitask", "fig5": "fig5_ablations"}

flags.DEFINE_enum("budget", "quick", list(common.BUDGETS), "run budget")
flags.DEFINE_string("root", "", "directory of the run directories (default: the budget's, "
                    "experiments/figures/runs for full, runs/quick/runs for quick)")
flags.DEFINE_string("out", "", "where the PNG and JSON go (default: experiments/figures/out for "
                    "full, runs/quick/out for quick)")
flags.DEFINE_string("results", "", "results document (default: docs/RESULTS.md for full, "
                    "runs/quick/RESULTS.md for quick)")
flags.DEFINE_bool("redraw", False, "replace a committed figure even when some of the runs it "
                  "drew have no record here")
flags.DEFINE_list("redraw_figures", [], "as --redraw, for these figures only (names as in "
                  "experiments/figures/out/, e.g. fig6_success,fig7_actions: figures whose "
                  "runs were made again under new names)")
flags.DEFINE_list("only", [], f"run only the arms of these scripts (default all): {', '.join(SCRIPTS)} "
                  f"or {sorted(ALIASES)}; every figure is still drawn, so the results document "
                  "stays whole")
flags.DEFINE_list("presets", [], "run only the arms of these presets (e.g. alfworld_cpu); "
                  "figures still draw every arm that has a run directory")
flags.DEFINE_list("seeds", [], "run only the arms of these RL seeds (e.g. 0: one seed of every "
                  "arm first); figures still draw every arm that has a run directory")
flags.DEFINE_list("runs", [], "run only these runs, by name (e.g. multitask3_cpu-s0-d9c1feb08b, as "
                  "--dry_run and --status list them); figures still draw every arm that has a "
                  "run directory")
flags.DEFINE_bool("skip_runs", False, "only draw from the runs that exist")
flags.DEFINE_bool("dry_run", False, "list the arms with their estimated time and stop")
flags.DEFINE_bool("status", False, "say which runs have records here and, per figure, whether "
                  "it would be redrawn or kept as committed; runs and writes nothing")
flags.DEFINE_float("timeout_s", None, "wall-clock limit per arm")
flags.DEFINE_integer("checkpoint_every", 0, "save every N RL steps instead of the preset's "
                     "train.checkpoint_every (0: the preset's); not part of a run's name, so "
                     "a long run that may outlive the session loses less when it resumes",
                     lower_bound=0)
flags.DEFINE_integer("jobs", 1, "arms run at once, each its own process (arms of one warm start "
                     "wait until the first has cached it); on 2 cores 2 jobs finished MiniHack "
                     "arms 1.1-1.3x sooner than 1 (measured); more cores take more")
FLAGS = flags.FLAGS


def modules(only) -> list:
    names = [ALIASES.get(n, n) for n in only] or list(SCRIPTS)
    bad = [n for n in names if n not in SCRIPTS]
    if bad:
        raise ValueError(f"unknown scripts {bad}; valid: {SCRIPTS} or {sorted(ALIASES)}")
    return [importlib.import_module(module_name(n)) for n in names]


def module_name(script: str) -> str:
    """The module of a figure script: experiments.figures.NAME for the paper's,
    experiments.studies.NAME for a study."""
    return f"experiments.{'studies' if script in STUDIES else 'figures'}.{script}"


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


def draw_all(mods, root: str, budget: str, out_dir: str) -> list[dict]:
    """Every figure of ``mods`` drawn into ``out_dir``, as it is (no publishing)."""
    return [rep for m in mods for rep in m.make(root, budget, out_dir)]


def make_all(mods, root: str, budget: str, out_dir: str, redraw=False) -> list[dict]:
    """Every figure of ``mods``, drawn and published into ``out_dir`` (publish.py);
    at the full budget a new figure waits for its first run."""
    return draw_and_publish(lambda draft: draw_all(mods, root, budget, draft), out_dir, redraw,
                            empty_new=budget != "full")


def main(argv):
    del argv
    mods = modules(FLAGS.only)  # whose arms run; every figure is drawn (results stay whole)
    every_mod = modules([])
    every_arm = collect_arms(every_mod, FLAGS.budget)
    arms = collect_arms(mods, FLAGS.budget)
    arms = keep_arms(arms, "presets", FLAGS.presets, lambda a: a.preset)
    arms = keep_arms(arms, "seeds", FLAGS.seeds, lambda a: str(a.seed))
    arms = keep_arms(arms, "runs", FLAGS.runs, lambda a: a.run_name)
    total_est = settings.sweep_estimate_s(arms)
    print(f"{len(arms)} runs, estimated {total_est / 60:.0f} min on 2 cores with shared warm "
          f"starts (budget {FLAGS.budget})")
    if FLAGS.dry_run:
        for a in arms:
            print(f"  {a.est_s / 60:5.1f} min alone  {a.run_name}  {a.label}  {' '.join(a.overrides)}")
        return
    root, out = place(FLAGS.budget, FLAGS.root, "root"), place(FLAGS.budget, FLAGS.out, "out")
    results = place(FLAGS.budget, FLAGS.results, "results")
    if FLAGS.status:
        print("\n".join(run_states(arms, root)))
        draft = draft_dir(out)
        try:
            print("\n".join(status_lines(draw_all(every_mod, root, FLAGS.budget, draft), out)))
        finally:
            shutil.rmtree(draft, ignore_errors=True)
        return
    start = time.perf_counter()
    if not FLAGS.skip_runs:
        run_arms(arms, root, FLAGS.timeout_s, jobs=FLAGS.jobs,
                 checkpoint_every=FLAGS.checkpoint_every)
    reports = make_all(every_mod, root, FLAGS.budget, out,
                       FLAGS.redraw or frozenset(FLAGS.redraw_figures))
    wall = time.perf_counter() - start
    cmd = " ".join(["python", "experiments/figures/reproduce.py", *sys.argv[1:]])
    drawn = [a for a in every_arm if a.run_name in {n for r in reports for n in r["drawn"]}]
    write_results(results, reports, FLAGS.budget, cmd, wall,
                  sum(v for v in common.wall_times(drawn, root).values() if v == v))
    if os.path.abspath(results) == readme_block.RESULTS_MD:
        readme_block.update_readme()  # the README's numbers come from the same records
    kept = [r["name"] for r in reports if r.get("kept")]
    print(f"wrote {results} ({len(reports) - len(kept)} figures drawn"
          + (f", {len(kept)} kept as committed: {', '.join(kept)}" if kept else "")
          + f") in {wall / 60:.1f} min")


if __name__ == "__main__":
    app.run(main)
