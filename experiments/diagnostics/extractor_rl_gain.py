"""What the extractor's RL changed, measured on the same inputs: the
warm-started extractor a run began from against the extractor of one of its
checkpoints (default: the latest), both answering greedily

- the pool games' latest won trajectories held at that checkpoint (the
  inputs of the run's own ``extractor/pool_*`` metrics, whose values at
  different evaluations score different trajectories, so their change over
  a run mixes what the extractor learned with what the actor now plays);
- won expert games of held-out tasks (as experiments/diagnostics/extractor_quality.py).

    python experiments/diagnostics/extractor_rl_gain.py --runs=experiments/figures/runs/alfworld_cpu-s0-f8d7bb7099[,...]

A run needs its checkpoints (they stay on the machine that made it: figure
records commit only metrics and config) and its warm start in the cache its
config names; the run is rebuilt from its config.json in a scratch
directory. One line per run and input set; each run's numbers are written
into its directory as extractor_rl_gain.json (--norecord: not), which the
figure runs commit with their metrics and the entry_quality figure draws.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile

from absl import app, flags


from experiments.figures.common import RL_GAIN
from experiments.diagnostics.warm_start_probe import extractor_answers

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command line, defined when run as a script only: the tests import
    this module beside the figure scripts, whose flags share its names."""
    flags.DEFINE_list("runs", [], "run directories (each with config.json, warm_start.json and "
                      "checkpoints/)")
    flags.DEFINE_integer("step", 0, "checkpoint step to compare (0: each run's latest)")
    flags.DEFINE_integer("games", 48, "held-out tasks the expert plays per environment")
    flags.DEFINE_string("json_out", "", "also write the numbers of every run as JSON here")
    flags.DEFINE_bool("record", True, "write each run's result into its directory as "
                      "extractor_rl_gain.json (committed with a figure run's record, drawn by the "
                      "entry_quality figure)")


def check_run_dir(path: str) -> str | None:
    """Why ``path`` cannot be compared, or None."""
    for need in ("config.json", "warm_start.json", "checkpoints"):
        if not os.path.exists(os.path.join(path, need)):
            return f"{path} has no {need}: not a run directory with checkpoints"
    with open(os.path.join(path, "warm_start.json")) as f:
        key = json.load(f).get("key")
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json
    cfg = load_config_json(RunConfig, os.path.join(path, "config.json"))
    if cfg.experience.mode == "none":
        return f"{path} ran without experience: it has no extractor"
    if not cfg.train.task_pool:
        return f"{path} has no fixed RL pool: no pool trajectories to compare on"
    from crl_jax.training.warm_cache import WarmStartCache
    if not key or not cfg.warm_start.cache_dir or not WarmStartCache(cfg.warm_start.cache_dir,
                                                                     key).has("extractor"):
        return (f"{path}: its warm start ({key}) has no extractor in {cfg.warm_start.cache_dir!r}; "
                f"the comparison needs the very warm start the run began from")
    return None


def _held_out_demos(run, games: int) -> list:
    """Expert games of the run's held-out tasks, played once for both extractors."""
    from crl_jax.training.warmstart import collect_demos
    return [d for src in run.eval_sources
            for d in collect_demos(src.env_name, src.make, src.tasks[:games],
                                   run.cfg.rollout.max_turns * 2, src.expert)]


def _held_out_scores(run, demos: list) -> dict:
    from crl_jax.diagnostics.entry_quality import entry_quality
    greedy = dataclasses.replace(run.agent.sampling, temperature=0.0)
    return entry_quality(demos, extractor_answers(run, greedy)).as_dict()


def _pool_scores(run) -> dict:
    out = run.entry_tracker.extractor_metrics(run.agent)  # no won pool game yet: nan
    nan = float("nan")
    return {"games": int(out["extractor/pool_games"]),
            **{k: out.get(f"extractor/pool_{k}", nan) for k in ("parsed", "exact", "step_f1")}}


def compare(path: str, step: int, games: int) -> dict:
    """{"pool": {"warm": scores, "rl": scores}, "held_out": ..., "step": s}."""
    from crl_jax.training.checkpointing import RunCheckpointer
    from crl_jax.training.components import build_run
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json

    cfg = load_config_json(RunConfig, os.path.join(path, "config.json"))
    run = build_run(cfg, tempfile.mkdtemp(prefix="extractor_rl_gain_"))
    try:
        warm = run.extractor.params
        ckpt = RunCheckpointer(os.path.join(path, "checkpoints"), keep=1000, async_save=False)
        try:
            restored = ckpt.restore(step or None, targets={"extractor_params": warm})
        finally:
            ckpt.close()
        run.entry_tracker.load_state_dict(restored.host_state["entry_tracker"])
        result, demos = {"step": int(restored.step)}, _held_out_demos(run, games)
        for name, params in (("warm", warm), ("rl", restored.trees["extractor_params"])):
            run.extractor.params = params
            run.agent.sampler.update_params(run.extractor.model)
            result.setdefault("pool", {})[name] = _pool_scores(run)
            result.setdefault("held_out", {})[name] = _held_out_scores(run, demos)
        return result
    finally:
        run.close()


def format_line(name: str, inputs: str, scores: dict) -> str:
    w, r = scores["warm"], scores["rl"]
    return (f"{name} {inputs} ({w['games']} games): step F1 {w['step_f1']:.3f} -> "
            f"{r['step_f1']:.3f} ({r['step_f1'] - w['step_f1']:+.3f}), exact {w['exact']:.3f} -> "
            f"{r['exact']:.3f}, an add {w['parsed']:.3f} -> {r['parsed']:.3f}")


def main(argv) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.runs:
        raise app.UsageError("--runs names no run directory")
    problems = [p for p in map(check_run_dir, FLAGS.runs) if p]
    if problems:
        raise app.UsageError("\n".join(problems))
    report = {}
    for path in FLAGS.runs:
        name = os.path.basename(os.path.normpath(path))
        report[name] = r = compare(path, FLAGS.step, FLAGS.games)
        if FLAGS.record:
            with open(os.path.join(path, RL_GAIN), "w") as f:
                json.dump({**r, "games_asked": FLAGS.games}, f, indent=1)
        print(f"{name}: warm start against its extractor at step {r['step']}")
        for inputs in ("pool", "held_out"):
            print("  " + format_line(name, inputs, r[inputs]))
    if FLAGS.json_out:
        with open(FLAGS.json_out, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
