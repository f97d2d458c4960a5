"""Diagnostics of finished runs, from their metrics.jsonl alone: how success
moved, whether guided episodes beat free ones, how often the extractor's
answers were malformed, how large the bank grew. The numbers behind many
of docs/FINDINGS.md's *Measured by* paragraphs.

    python experiments/figures/run_stats.py --preset=minihack_room_cpu
    python experiments/figures/run_stats.py --same RUN_A RUN_B   # do two runs repeat?
    python experiments/figures/run_stats.py --same RUN_A RUN_B \
        --metrics=train/success,train/actions   # from which step do these part?
"""
from __future__ import annotations

import glob
import os
from typing import Mapping, Sequence


from experiments.figures import aggregate, common

# (column, how it is computed from the rows; see run_summary below)
COLUMNS = ("seed", "mode", "settings", "steps", "train first 5", "train last 5", "train last 3",
           "guided", "free",
           "eval0 no exp", "evalN no exp", "evalN with exp", "malformed", "bank", "ext updates",
           "asks", "ask turns")


from crl_jax.training.run_summary import mean as _mean  # noqa: E402
from crl_jax.training.run_summary import series as _series  # noqa: E402


def run_summary(rows: Sequence[Mapping]) -> dict:
    """One run's diagnostics: training success over its first and last 5
    steps, and over its last 3 (the figures' final value per seed,
    aggregate.final_value); guided and free training success (means over
    the steps that had such episodes); first and last held-out evaluations;
    the share of the extractor's calls whose answer was malformed (counters
    are cumulative, so the last row holds the totals); the bank's final size; the extractor's RL
    updates and the search-and-ask calls that reached the bank over the run;
    the actor's ask turns in training (with controls.ask_answers=nothing
    none reaches the bank)."""
    train = _series(rows, "train/success")
    last = max(rows, key=lambda r: r["step"]) if rows else {}
    calls = last.get("manager/extractor_calls", 0)
    no_exp = _series(rows, "eval_no_exp/success")
    with_exp = _series(rows, "eval_with_exp/success")
    return {"steps": int(last.get("step", 0)),
            "train first 5": _mean(train[:5]), "train last 5": _mean(train[-5:]),
            "train last 3": aggregate.final_value(rows, "train/success", 3) if train
            else float("nan"),
            "guided": _mean(_series(rows, "train/success_guided")),
            "free": _mean(_series(rows, "train/success_free")),
            "eval0 no exp": no_exp[0] if no_exp else float("nan"),
            "evalN no exp": no_exp[-1] if no_exp else float("nan"),
            "evalN with exp": with_exp[-1] if with_exp else float("nan"),
            "malformed": last.get("manager/calls_malformed", 0) / calls if calls else float("nan"),
            "bank": last.get("bank/size", float("nan")),
            "ext updates": int(sum(_series(rows, "extractor/updates"))) if calls else float("nan"),
            "asks": last.get("manager/asks", 0) if calls else float("nan"),
            "ask turns": round(sum(float(r["train/asks_per_episode"]) * float(r["train/episodes"])
                                   for r in rows if "train/asks_per_episode" in r))}


def run_dirs(root: str, preset: str) -> list[str]:
    """Finished-or-not run directories of ``preset`` under ``root`` (not the
    ones set aside as stale)."""
    found = glob.glob(os.path.join(root, f"{preset}-s*-*"))
    return sorted(d for d in found if os.path.isdir(d) and ".stale-" not in d
                  and os.path.exists(os.path.join(d, common.METRICS)))


# the seed and mode have columns; bookkeeping keys do not change what a run learns
_NOT_SETTINGS = ("train.seed", "experience.mode", *common.BOOKKEEPING_KEYS)


def describe(directory: str, preset: str) -> dict:
    """The run's diagnostics, its seed and mode, and the settings where it
    departs from its preset (what makes it an ablation)."""
    from crl_jax.training.config_io import flatten_config, load_config_json
    from experiments.configs import load_preset
    from crl_jax.training.config import RunConfig
    cfg = flatten_config(load_config_json(RunConfig, os.path.join(directory, "config.json")))
    base = flatten_config(load_preset(preset))
    changed = [f"{k}={v}" for k, v in cfg.items()
               if k not in _NOT_SETTINGS and base.get(k) != v and not common.unread(k, cfg)]
    rows = common.read_rows(os.path.join(directory, common.METRICS))
    return {"run": os.path.basename(directory), "seed": cfg["train.seed"],
            "mode": cfg["experience.mode"], "settings": " ".join(changed) or "preset",
            **run_summary(rows)}


def repeat_check(rows_a: Sequence[Mapping], rows_b: Sequence[Mapping],
                 metrics: Sequence[str] = ()) -> dict:
    """Whether two runs' metrics agree step by step, the wall clock aside
    (crl_jax.training.metrics.is_clock_metric): the metrics both hold and
    how many of them are equal at every step, the differing ones with the
    first step at which each differs, and the metrics only one run holds
    (counters added between them). ``metrics`` restricts the comparison to
    those names (an unknown one is an error listing what both runs hold)."""
    from crl_jax.training.metrics import is_clock_metric
    by_step = [{int(r["step"]): r for r in rows} for rows in (rows_a, rows_b)]
    keys = [{k for r in rows for k in r if k != "step" and not is_clock_metric(k)}
            for rows in (rows_a, rows_b)]
    shared = keys[0] & keys[1]
    unknown = sorted(set(metrics) - shared)
    if unknown:
        raise SystemExit(f"metrics not held by both runs: {', '.join(unknown)}; "
                         f"both hold: {', '.join(sorted(shared))}")
    compared = set(metrics) if metrics else shared
    steps = sorted(set(by_step[0]) | set(by_step[1]))
    def first_difference(k):
        return next((step for step in steps
                     if by_step[0].get(step, {}).get(k) != by_step[1].get(step, {}).get(k)), None)
    first = {k: step for k in compared if (step := first_difference(k)) is not None}
    return {"steps": (len(by_step[0]), len(by_step[1])), "compared": len(compared),
            "equal": len(compared) - len(first), "differing": sorted(first),
            "first_differing": dict(sorted(first.items())),
            "first_step": min(first.values()) if first else None,
            "only_a": sorted(keys[0] - keys[1]), "only_b": sorted(keys[1] - keys[0])}


def first_step_with(rows: Sequence[Mapping], metric: str) -> int | None:
    """The first step at which ``metric`` is positive (e.g. the extractor's
    first RL update), or None."""
    hits = [int(r["step"]) for r in rows if float(r.get(metric, 0) or 0) > 0]
    return min(hits) if hits else None


def format_table(records: Sequence[dict]) -> str:
    def cell(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    head = "| run | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    lines += ["| " + " | ".join([r["run"], *(cell(r[c]) for c in COLUMNS)]) + " |"
              for r in records]
    return "\n".join(lines)


def _metrics_path(run: str, root: str) -> str:
    """A metrics.jsonl given as itself, as its run directory, or as a run name under ``root``."""
    if os.path.isfile(run):
        return run
    path = os.path.join(run if os.path.isdir(run) else os.path.join(root, run), common.METRICS)
    if not os.path.exists(path):
        raise SystemExit(f"no metrics at {path}")
    return path


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=common.DEFAULT_ROOT)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--preset", help="the table of this preset's runs under --root")
    what.add_argument("--same", nargs=2, metavar="RUN",
                      help="two runs (directories, names under --root, or metrics.jsonl "
                           "files): do their metrics "
                           "agree at every step, the wall clock aside?")
    parser.add_argument("--metrics", default="",
                        help="with --same: compare only these metrics (comma separated)")
    args = parser.parse_args(argv)
    if args.same:
        rows = [common.read_rows(_metrics_path(d, args.root)) for d in args.same]
        check = repeat_check(*rows, metrics=[m for m in args.metrics.split(",") if m])
        # with --metrics, each metric's first differing step; else the metrics that part first
        parts = [f"{k} at step {v}" for k, v in check["first_differing"].items()
                 if args.metrics or v == check["first_step"]]
        updates = [first_step_with(r, "extractor/updates") for r in rows]
        updates = [f"step {u}" if u is not None else "none" for u in updates]
        print(f"steps {check['steps'][0]} / {check['steps'][1]}; of {check['compared']} metrics "
              f"both runs hold (wall clock aside), {check['equal']} are equal at every step; "
              f"differing: {', '.join(check['differing']) or 'none'}; only in the first: "
              f"{', '.join(check['only_a']) or 'none'}; only in the second: "
              f"{', '.join(check['only_b']) or 'none'}")
        print(f"first differing step: {check['first_step'] if parts else 'none'}"
              f"{' (' + '; '.join(parts) + ')' if parts else ''}; first extractor update: "
              f"{updates[0]} / {updates[1]}")
        return
    dirs = run_dirs(args.root, args.preset)
    if not dirs:
        raise SystemExit(f"no runs of {args.preset} under {args.root}")
    print(format_table([describe(d, args.preset) for d in dirs]))


if __name__ == "__main__":
    main()
