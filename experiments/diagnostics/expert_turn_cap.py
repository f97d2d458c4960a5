"""How much knowing the plan is worth to the expert, by turn cap: the
searching expert against the informed expert given the game's own plan
(and that plan with 1 and 2 wrong steps), on a preset's training games;
with households, also the informed expert given the household's true
lesson for the goal's type (its homes: right at about the home rate), on
the RL pool's games.

    python experiments/diagnostics/expert_turn_cap.py --config=alfworld_cpu [--games=300] [--caps 8 10 12 15 20]
    python experiments/diagnostics/expert_turn_cap.py --config=minihack_room_cpu --caps 4 5 6 8 10
    python experiments/diagnostics/expert_turn_cap.py --config=alfworld_households_cpu [--by_type=10]

A game counts as won at cap c when the expert wins within c actions. The
cap at which searching often fails and the informed expert still wins is
the one that makes memory pay.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Annotated


import numpy as np
import tyro

from crl_jax.training import config_io
from experiments.configs import PRESETS
from crl_jax.training.config import RunConfig


@dataclasses.dataclass(frozen=True)
class Command:
    """The preset whose games to play, and what to report."""

    cfg: Annotated[RunConfig, tyro.conf.arg(name=""), tyro.conf.FlagConversionOff]
    config: str = "alfworld_cpu"
    """The preset: a module of experiments/configs/."""
    games: int = 300
    """Training games to play (the first ones of the preset's pool)."""
    caps: tuple[int, ...] = (8, 10, 12, 15, 20)
    """Turn caps to report."""
    longest: int = 60
    """The turn cap the experts play under (above every reported cap)."""
    by_type: int = 0
    """Also print each expert's wins within this cap per task type (0: no)."""


def measure(cfg: RunConfig, games: int, longest: int, seed: int = 0) -> dict[str, list]:
    """Actions each expert needed per game (None: lost within ``longest``);
    under "task type", each game's (ALFWorld)."""
    from crl_jax.envs.registry import make_expert
    from crl_jax.training.components import task_sources
    from crl_jax.training.guided_demos import (corrupt_plan, own_plan_demo, plan_expert,
                                               plan_places, plan_steps)
    from crl_jax.training.warmstart import play_expert, plan_entry

    from crl_jax.training.components import task_pool
    from crl_jax.training.tasks import household_split

    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=longest))
    src = task_sources(cfg, cfg.env.train_split, None)[0]
    split = household_split(cfg)
    if split is not None:  # the RL pool's games, where a lesson is what memory can give
        src = task_pool(cfg, src)
    env, rng = src.make(), np.random.default_rng(seed)
    out: dict[str, list] = {"searching": [], "own plan": [], "1 wrong step": [],
                            "2 wrong steps": []}
    if split is not None:
        out["household lesson"] = []
        from crl_jax.envs.alfworld_expert import AlfWorldEnvExpert
        from crl_jax.envs.alfworld_lessons import lesson_steps
        from crl_jax.training.lesson_demos import LessonBook
        book = LessonBook(split)
    types = []
    for task in src.tasks[:games]:
        types.append(env.games[task].task_type if hasattr(env, "games") else "")
        demo = play_expert(env, task, make_expert(src.expert), longest, src.env_name)
        out["searching"].append(len(demo.actions) if demo.won else None)
        if split is not None:
            record = env.games[task]
            steps = lesson_steps(book.true(record), record.params.get("parent_target", ""))
            d = play_expert(env, task, AlfWorldEnvExpert(steps), longest, src.env_name)
            out["household lesson"].append(len(d.actions) if d.won else None)
        if not demo.won:  # no plan to give: the plan rows count it lost
            for name in ("own plan", "1 wrong step", "2 wrong steps"):
                out[name].append(None)
            continue
        plan = plan_entry(own_plan_demo(env, demo, longest))
        places = plan_places(src.env_name, demo.observations[0])
        # a wrong step without a place (MiniHack: a move) becomes another of the game's actions
        moves = () if places else sorted(set(demo.actions))
        for name, k in (("own plan", 0), ("1 wrong step", 1), ("2 wrong steps", 2)):
            line = corrupt_plan(plan, k, rng, places, moves) if k else plan
            d = play_expert(env, task, plan_expert(src.env_name, plan_steps(line)), longest,
                            src.env_name)
            out[name].append(len(d.actions) if d.won else None)
    env.close()
    return {**out, "task type": types}


def report(results: dict[str, list], caps: tuple[int, ...]) -> str:
    lines = ["| expert | " + " | ".join(f"won within {c}" for c in caps)
             + " | won at all | actions when won |",
             "|---|" + "---|" * (len(caps) + 2)]
    for name, counts in results.items():
        won = [n for n in counts if n is not None]
        cells = [f"{sum(n <= c for n in won) / len(counts):.2f}" for c in caps]
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {len(won) / len(counts):.2f} | {np.mean(won):.1f} |")
    return "\n".join(lines)


def actions_ratio_report(results: dict[str, list], caps: tuple[int, ...]) -> str:
    """Mean actions of the games each expert won within each cap, and the
    searching expert's over the informed expert's (own plan): the fewer-
    actions ratio that guided over free episodes would show at that cap if
    the actor played like the experts. A cap counts only the short searches
    as wins, so it compresses the ratio the 60-action expert shows."""
    def mean_within(counts, cap):
        won = [n for n in counts if n is not None and n <= cap]
        return float(np.mean(won)) if won else float("nan")
    lesson = "household lesson" in results  # households: the lesson's column too
    lines = ["| cap | searching: actions when won | own plan: actions when won | searching / own plan |"
             + (" household lesson: actions when won | searching / lesson |" if lesson else ""),
             "|---|---|---|---|" + ("---|---|" if lesson else "")]
    for c in caps:
        a, b = mean_within(results["searching"], c), mean_within(results["own plan"], c)
        row = f"| {c} | {a:.1f} | {b:.1f} | {a / b:.2f}x |"
        if lesson:
            h = mean_within(results["household lesson"], c)
            row += f" {h:.1f} | {a / h:.2f}x |"
        lines.append(row)
    return "\n".join(lines)


def by_type_report(results: dict[str, list], types: list[str], cap: int) -> str:
    """Each expert's share of games won within ``cap`` (and the actions of
    those wins), per task type; ``types[i]`` is game i's."""
    names = list(results)
    lines = ["| task type | games | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for tt in sorted(set(types)):
        idx = [i for i, t in enumerate(types) if t == tt]
        cells = []
        for name in names:
            won = [results[name][i] for i in idx
                   if results[name][i] is not None and results[name][i] <= cap]
            cells.append(f"{len(won) / len(idx):.2f} ({np.mean(won):.1f})" if won else "0.00")
        lines.append(f"| {tt} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    command = config_io.parse_preset_command(Command, sys.argv[1:] if argv is None else argv,
                                             "alfworld_cpu", __doc__, presets=PRESETS)
    from crl_jax.training.guided_demos import informed
    if not informed(command.cfg.env.names[0]):
        print(f"error: {command.cfg.env.names[0]} has no informed expert (ALFWorld and "
              "MiniHack's open rooms have)", file=sys.stderr)
        return 2
    results = measure(command.cfg, command.games, command.longest)
    types = results.pop("task type")
    where = (f" (room size {command.cfg.env.room_size})"
             if command.cfg.env.names[0].startswith("alfworld") else "")
    print(f"{command.games} training games of {command.config}{where}:")
    print(report(results, command.caps))
    print("\nActions of the games won within each cap:")
    print(actions_ratio_report(results, command.caps))
    if command.by_type:
        print(f"\nWon within {command.by_type} actions by task type (actions of those wins):")
        print(by_type_report(results, types, command.by_type))
    return 0


if __name__ == "__main__":
    sys.exit(main())
