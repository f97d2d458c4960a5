"""The best lessons a households run's own games allow, step by step.

    python experiments/diagnostics/lesson_ceiling.py --env.home_rate=0.8 --env.households=208 \\
        --env.num_generated=10400 --train.step_seeded_draws=true [--train.tasks_per_step=8]

A bank learns where a type lies in a household only from the games its run
plays. This replays a run's draws (train.step_seeded_draws: each step's
games depend on the seed and step alone) without a model and, for each
step's games, asks what the best lesson from the earlier steps' games of
the same household and goal type would have said: the receptacle that
held the type in most of them (ties to the one met first). Printed per
step and averaged over every step:

- met: the share of the step's games whose (household, goal type) pair an
  earlier step played, so that a lesson could exist at all;
- first home: the share whose best lesson names the household's first home;
- holds it: the share whose best lesson names a receptacle that holds the
  type in this game (the lesson leads the actor to it);
- oracle: the share whose household's first home holds the type in this
  game (what the oracle lesson, controls.oracle_source=lessonfirst, gives);
- every type: "holds it" when the lesson counts every earlier game of the
  household that held the type, goal or not (what a bank that reads every
  type a look showed can learn: experience.sightings_of=every).

A bank reading the run's episodes sees only the receptacles they looked
into, so its lessons do no better than these; the oracle's margin over
"holds it" is what a perfect extractor cannot recover in the run.
"""
from __future__ import annotations

import collections
import dataclasses
import sys

from crl_jax.envs.alfworld_households import household_index
from crl_jax.envs.alfworld_regularity import placements
from crl_jax.training import config_io
from crl_jax.training.step import seeded_draw
from crl_jax.training.tasks import household_split
from experiments.configs import PRESETS
from experiments.diagnostics.warm_start_probe import PresetCommand, write_report


@dataclasses.dataclass(frozen=True)
class CeilingCommand(PresetCommand):
    """The households preset to replay, and where to write the numbers."""

    config: str = "alfworld_households_cpu"
    json_out: str | None = None
    """Also write the report as JSON here."""


def replay(cfg) -> list[dict]:
    """One row per RL step of ``cfg``'s draws (see the module docstring)."""
    split = household_split(cfg)
    if split is None or not cfg.train.step_seeded_draws:
        raise ValueError("lesson_ceiling replays households runs with train.step_seeded_draws=true "
                         "(env.households > 0)")
    pool = [i for i in range(cfg.env.num_generated) if split.in_pool(i)]
    seen: dict[tuple, collections.Counter] = {}  # (household, type) -> holders over its games
    seen_every: dict[tuple, collections.Counter] = {}  # ... over its games, goal or not
    firsts = {(h.index, t.lower()): h.home_names(t)[0] for h in split.rl_members()
              for t, _ in h.homes}
    rows = []
    for step in range(cfg.train.steps):
        games = [split.game(pool[k]) for k in seeded_draw(cfg.train, step, 0, len(pool))]
        counts = collections.Counter()
        played = []
        for g in games:
            otype = str(g.params["object_target"]).lower()
            placed = {p.otype: p.holders for p in placements(g)}
            holders = placed.get(otype, frozenset())
            pair = (household_index(g.id), otype)
            best, best_every = _majority(seen.get(pair)), _majority(seen_every.get(pair))
            counts["met"] += best is not None
            counts["first home"] += best is not None and best == firsts[pair]
            counts["holds it"] += best is not None and best in holders
            counts["oracle"] += firsts[pair] in holders
            counts["every type"] += best_every is not None and best_every in holders
            played.append((pair, placed))
        for (house, otype), placed in played:  # a step's games teach the next steps
            seen.setdefault((house, otype), collections.Counter()).update(
                sorted(placed.get(otype, ())))
            for t, holders in placed.items():
                seen_every.setdefault((house, t), collections.Counter()).update(sorted(holders))
        rows.append({"step": step, "games": len(games),
                     **{k: counts[k] / len(games) for k in KEYS}, "pairs met": len(seen)})
    return rows


KEYS = ("met", "first home", "holds it", "oracle", "every type")


def _majority(votes: collections.Counter | None) -> str | None:
    """The receptacle with the most votes, ties to the first met."""
    return max(votes, key=votes.__getitem__) if votes else None


def summary(rows: list[dict]) -> dict:
    return {k: sum(r[k] for r in rows) / len(rows) for k in KEYS} | {
        "pairs met": rows[-1]["pairs met"],
        "games per pair": sum(r["games"] for r in rows) / max(1, rows[-1]["pairs met"])}


def main(argv=None) -> int:
    command = config_io.parse_preset_command(CeilingCommand, sys.argv[1:] if argv is None else argv,
                                             "alfworld_households_cpu", __doc__, presets=PRESETS)
    try:
        rows = replay(command.cfg)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{'step':>4} {'games':>5} {'met':>5} {'first home':>10} {'holds it':>8} {'oracle':>6} "
          f"{'every type':>10}")
    for r in rows:
        print(f"{r['step']:>4} {r['games']:>5} {r['met']:>5.2f} {r['first home']:>10.2f} "
              f"{r['holds it']:>8.2f} {r['oracle']:>6.2f} {r['every type']:>10.2f}")
    mean = summary(rows)
    print(f"over every step: met {mean['met']:.2f}, first home {mean['first home']:.2f}, "
          f"holds it {mean['holds it']:.2f}, oracle {mean['oracle']:.2f}, "
          f"every type {mean['every type']:.2f}; "
          f"{mean['pairs met']} pairs met, {mean['games per pair']:.1f} games each")
    write_report({"rows": rows, "mean": mean}, command.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
