"""Regenerates every figure and table of the paper at CPU scale, then docs/RESULTS.md
(or, with --budget=paper, on the checkpoint presets: BUILD.md "Figures at paper scale").

    python experiments/figures/reproduce.py --budget=quick [--only=fig6,table1]   # under runs/quick/
    python experiments/figures/reproduce.py --budget=full --dry_run   # arms and estimated time
    python experiments/figures/reproduce.py --budget=full --only=fig6,fig7 --presets=alfworld_cpu
    python experiments/figures/reproduce.py --budget=full --jobs=4 --seeds=0   # seed 0, 4 at a time
    python experiments/figures/reproduce.py --budget=full --runs=multitask3_cpu-s0-d9c1feb08b
    python experiments/figures/reproduce.py --budget=full --status   # what can be redrawn here
    python experiments/figures/reproduce.py --budget=paper --dry_run   # checkpoint presets: hours

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
from experiments.figures.sweep import job_environment, run_arms

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

flags.DEFINE_enum("budget", "quick", list(common.BUDGETS), "run budget (paper: the figures' "
                  "arms on the paper presets, checkpoints from $CRL_CHECKPOINTS; BUILD.md "
                  "\"Figures at paper scale\")")
flags.DEFINE_enum("profile", "released", ["released", "paper"], "--budget=paper: the presets' "
                  "profile (released: the authors' code; paper: the paper's text)")
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
                  "--dry_run and --status list them), in the order named; figures still draw every "
                  "arm that has a run directory")
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


def arms_by_module(mods, budget: str, log=print) -> dict:
    """{module: its arms at ``budget``}, each module's arms built once; at
    "paper", only the modules whose presets all have a paper preset (the
    others are named, and left out)."""
    out = {}
    for m in mods:
        name = m.__name__.rsplit(".", 1)[-1]
        if budget == "paper" and name in STUDIES:
            log(f"{name}: no paper-scale arms (a study of the CPU testbed, not a figure of "
                "the paper)")
            continue
        try:
            out[m] = m.arms(budget)
        except settings.NoPaperPreset as err:
            log(f"{name}: no paper-scale arms ({err})")
    return out


def figure_hours(by_module: dict, arms: list[common.Arm]) -> dict[str, tuple[int, float]]:
    """{figure script: (runs, device-hours)} over ``arms`` (an arm two
    figures share counts in both)."""
    keys = {a.key for a in arms}
    out = {}
    for m, module_arms in by_module.items():
        mine = [a for a in common.dedupe_arms(module_arms) if a.key in keys]
        if mine:
            out[m.__name__.rsplit(".", 1)[-1]] = (len(mine), sum(a.est_s for a in mine) / 3600)
    return out


def paper_dry_run(by_module: dict, arms: list[common.Arm]) -> None:
    """Each figure's device-hours (crl_jax/training/cost_model.py), then each arm's."""
    unit = f"{settings.ACCELERATOR}-hours"
    for name, (runs, total) in figure_hours(by_module, arms).items():
        print(f"  {total:8,.0f} {unit}  {runs:2d} runs  {name}")
    for a in arms:
        print(f"  {a.est_s / 3600:8,.0f} {unit}  {a.run_name}  {a.label}  {' '.join(a.overrides)}")


def keep_arms(arms: list[common.Arm], flag: str, wanted: list[str], value,
              in_wanted_order: bool = False) -> list[common.Arm]:
    """The arms whose ``value(arm)`` is in ``wanted`` (all when it is empty),
    in the figures' order or, with ``in_wanted_order``, in ``wanted``'s (so
    a reference can run first); a wanted value no arm has is an error that
    lists the valid ones."""
    if not wanted:
        return arms
    known = sorted({value(a) for a in arms})
    bad = [w for w in wanted if w not in known]
    if bad:
        raise ValueError(f"--{flag} {bad} have no arms in these figures; valid: {known}")
    kept = [a for a in arms if value(a) in wanted]
    return sorted(kept, key=lambda a: wanted.index(value(a))) if in_wanted_order else kept


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
    settings.set_paper_profile(FLAGS.profile)
    wanted = {m.__name__ for m in modules(FLAGS.only)}  # whose arms run

    def say_why(line: str) -> None:  # a module left out, named when its arms were asked for
        if any(name.endswith("." + line.split(":", 1)[0]) for name in wanted):
            print(line)
    every = arms_by_module(modules([]), FLAGS.budget, log=say_why)  # every figure is drawn
    by_module = {m: a for m, a in every.items() if m.__name__ in wanted}
    every_mod = list(every)
    every_arm = common.dedupe_arms(a for module_arms in every.values() for a in module_arms)
    arms = common.dedupe_arms(a for module_arms in by_module.values() for a in module_arms)
    arms = keep_arms(arms, "presets", FLAGS.presets, lambda a: a.preset)
    arms = keep_arms(arms, "seeds", FLAGS.seeds, lambda a: str(a.seed))
    arms = keep_arms(arms, "runs", FLAGS.runs, lambda a: a.run_name, in_wanted_order=True)
    if FLAGS.budget == "paper":
        print(f"{len(arms)} runs, estimated {sum(a.est_s for a in arms) / 3600:,.0f} "
              f"{settings.ACCELERATOR}-hours ({FLAGS.profile} profile; "
              "crl_jax/training/cost_model.py's assumptions)")
        if FLAGS.dry_run:
            return paper_dry_run(by_module, arms)
    else:
        print(f"{len(arms)} runs, estimated {settings.sweep_estimate_s(arms) / 60:.0f} min on 2 "
              f"cores with shared warm starts (budget {FLAGS.budget})")
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
                 checkpoint_every=FLAGS.checkpoint_every,
                 env_extra=job_environment(FLAGS.jobs, FLAGS.budget))
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
