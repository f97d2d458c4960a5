"""Held-out success by ALFWorld task type, free and guided, from a run's
latest checkpoint: which goals a lesson (the bank's, or the oracle's) helps
the actor win, and which it cannot.

    python experiments/diagnostics/success_by_type.py RUN_DIR [RUN_DIR ...] [--games=64] \\
        [--without=pick_two_obj_and_place] [--json_out=F]

Each run is rebuilt from its config.json (its warm start must be in the
cache), its actor and bank restored from the latest checkpoint, and the
first --games held-out games of the pool's households played twice with
the evaluation's seed: free, and guided (each episode reads what the run's
guided episodes read). A run without experience plays free only. Per task
type: games, success free / guided, guided minus free, and the actions of
won episodes; with several runs (a group's seeds), also all of them pooled.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import tempfile

import numpy as np
import tyro

from experiments.diagnostics.warm_start_probe import write_report


@dataclasses.dataclass(frozen=True)
class Command:
    runs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories (each with config.json and checkpoints/)."""
    games: int = 64
    """Held-out games to play per mode: the first of the run's (at most its
    env.num_eval_tasks, the games its evaluations play)."""
    without: str = ""
    """Also a row of every game but this task type's (e.g. pick_two_obj_and_place)."""
    json_out: str | None = None
    """Also write the tables as JSON here."""


def by_type(won, actions, types, without: str = "") -> dict[str, dict]:
    """{task type (and "all", and "all without T" for ``without`` T):
    {"games", "success", "actions_when_won"}} of episodes given as parallel
    sequences: won (bool), actions, type."""
    won, actions, types = np.asarray(won, bool), np.asarray(actions, float), np.asarray(types)
    out, rows = {}, [*sorted(set(types.tolist())), "all"]
    for name in rows + ([f"all without {without}"] if without else []):
        part = (np.ones(len(types), bool) if name == "all" else
                types != without if name.startswith("all without ") else types == name)
        wins = actions[part & won]
        out[name] = {"games": int(part.sum()), "success": float(won[part].mean()),
                     "actions_when_won": float(wins.mean()) if wins.size else float("nan")}
    return out


def pool(results: list[dict]) -> dict[str, dict]:
    """``by_type`` results of several runs as one: games and wins summed,
    the actions of won episodes averaged over every win."""
    out: dict[str, dict] = {}
    for result in results:
        for name, r in result.items():
            o = out.setdefault(name, {"games": 0, "wins": 0.0, "actions": 0.0})
            wins = r["success"] * r["games"]
            o["games"] += r["games"]
            o["wins"] += wins
            o["actions"] += wins * r["actions_when_won"] if wins else 0.0
    names = sorted(n for n in out if not n.startswith("all")) + sorted(
        n for n in out if n.startswith("all"))
    return {n: {"games": out[n]["games"], "success": out[n]["wins"] / out[n]["games"],
                "actions_when_won": out[n]["actions"] / out[n]["wins"] if out[n]["wins"]
                else float("nan")} for n in names}


def table(free: dict, guided: dict | None) -> str:
    """Markdown rows of ``by_type`` results, free beside guided."""
    head = "| task type | games | free | guided | guided - free | actions won free | guided |"
    lines = [head, "|---|" + "---|" * 6]
    for name, f in free.items():
        g = (guided or {}).get(name)
        cells = [name, str(f["games"]), f"{f['success']:.2f}",
                 f"{g['success']:.2f}" if g else "-",
                 f"{g['success'] - f['success']:+.2f}" if g else "-",
                 f"{f['actions_when_won']:.1f}", f"{g['actions_when_won']:.1f}" if g else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def play_by_type(run, games: int, without: str = "") -> dict[str, dict]:
    """{"free": by_type, "guided": by_type (runs with experience)} on the
    first ``games`` held-out games of ``run`` (crl_jax Run, restored),
    played as its evaluations play them."""
    from crl_jax.training.evaluation import Evaluator
    from crl_jax.training.logs import progress_bar

    src, evaluator = run.eval_sources[0], Evaluator(run)
    tasks = list(src.tasks[:games])
    env = src.make()
    types = [env.games[t].task_type for t in tasks]
    env.close()
    try:
        out, modes = {}, ("free", "guided") if run.use_experience else ("free",)
        bar = progress_bar(len(modes) * len(tasks), "held-out games by type", "episode")
        for mode in modes:
            eps = evaluator.play("eval", src, tasks, mode == "guided", bar.update)
            out[mode] = by_type([e.won for e in eps], [e.num_actions for e in eps], types,
                                without)
        bar.close()
        return out
    finally:
        evaluator.close()


def measure(run_dir: str, games: int, without: str = "") -> dict:
    from crl_jax.training.checkpointing import RunCheckpointer
    from crl_jax.training.components import build_run
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json
    from crl_jax.training.loop import restore_checkpoint
    from crl_jax.training.step import RunState

    cfg = load_config_json(RunConfig, os.path.join(run_dir, "config.json"))
    if not cfg.env.names[0].startswith("alfworld"):
        raise ValueError(f"{run_dir}: task types are ALFWorld's; this run plays {cfg.env.names}")
    run = build_run(cfg, tempfile.mkdtemp(prefix="success_by_type_"))
    try:
        with RunCheckpointer(os.path.join(run_dir, "checkpoints"), async_save=False) as ckpt:
            step = ckpt.latest_step()
            if step is None:
                raise ValueError(f"{run_dir}: no checkpoint to restore")
            restore_checkpoint(run, ckpt, RunState.fresh(cfg.train.seed))
        return {"step": step, **play_by_type(run, games, without)}
    finally:
        run.close()


def main(argv=None) -> int:
    c = tyro.cli(Command, args=sys.argv[1:] if argv is None else argv, description=__doc__)
    if c.games < 1:
        print("error: --games must be >= 1", file=sys.stderr)
        return 2
    report = {}
    for run_dir in c.runs:
        try:
            report[run_dir] = got = measure(run_dir, c.games, c.without)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"\n{os.path.basename(run_dir.rstrip('/'))} (checkpoint {got['step']}):")
        print(table(got["free"], got.get("guided")))
    if len(report) > 1:
        runs = list(report.values())
        guided = [r["guided"] for r in runs if "guided" in r]
        print(f"\nthe {len(runs)} runs pooled:")
        print(table(pool([r["free"] for r in runs]),
                    pool(guided) if len(guided) == len(runs) else None))
    write_report(report, c.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
