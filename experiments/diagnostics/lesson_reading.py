"""Does a households preset's warm-started extractor read a lesson from a
trajectory, or recall one? Its greedy answers to consolidation prompts of
expert games, against what the prompt's trajectory shows
(alfworld_lessons.read_lesson: where the goal's type was picked up, or no
lesson when it never was):

    python experiments/diagnostics/lesson_reading.py --config=alfworld_households_cpu [--games=48] [--missteps=2] [--section.key=value ...]

Two sets of games: the warm start's households (the rooms its pairs came
from) and the RL pool's (rooms it never saw, where RL asks it to read).
Each game gives two prompts: its whole trajectory, and the trajectory cut
before its first pick-up of the goal's type (a lost episode that found
nothing: the right answer is no lesson). --missteps puts that many rejected
actions into every trajectory, as the actor's show them. Per set, the share
of answers that are right (the lesson the text shows, or none where it
shows none), of lessons written where the text shows none, of lessons
with the right type but other homes, and of other answers (another type,
malformed). It builds the run as experiments/run.py would (warm start
included; pass --warm_start.cache_dir to reuse a cached one).
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from experiments.diagnostics.warm_start_probe import built_run, parse, write_report


def cut_before_pick(demo):
    """``demo`` up to (not including) its first pick-up of anything; None
    when it picks up nothing or at its first action."""
    from crl_jax.envs.alfworld_expert import PICK
    for i, obs in enumerate(demo.observations[1:]):
        if PICK.match(obs.strip()):
            return None if i == 0 else dataclasses.replace(
                demo, actions=demo.actions[:i], observations=demo.observations[:i + 1], won=False)
    return None


def lesson_shown(goal: str, traj: str) -> str | None:
    """What a trajectory text shows, as ``verdict`` judges by: its first
    pick-up's home, or, where its observations name the goal's objects they
    showed, the first receptacle seen holding the type; None for neither."""
    from crl_jax.envs.alfworld_lessons import (NO_HOME, names_sightings, read_lesson,
                                               read_sightings)
    if not names_sightings(traj):
        return read_lesson(goal, traj)
    seen = (read_sightings(goal, traj) or "").split(" (evidence: ")[0]
    return seen if seen and not seen.endswith(NO_HOME) else None


def verdict(answer: str, prompt: str) -> str:
    """right / invented (a lesson where the text shows none) / wrong homes /
    other, for an extractor ``answer`` to a consolidation ``prompt``. What
    the text shows is its first pick-up's home, or, where its observations
    name the goal's objects they showed (experience.trajectory_sightings),
    the first receptacle seen holding the type (read_sightings)."""
    import json

    from crl_jax.envs.alfworld_lessons import about_room, parse_lesson
    from crl_jax.training.lesson_demos import prompt_lines
    goal, room, traj = prompt_lines(prompt, "goal", "room", "traj")
    shown = lesson_shown(goal, traj)
    try:
        ops = json.loads(answer)
        op = ops[0] if isinstance(ops, list) and ops and isinstance(ops[0], dict) else {}
    except json.JSONDecodeError:
        op = {}
    if op.get("op") == "return":
        return "right" if shown is None else "other"
    entry = str(op.get("entry", "")) if op.get("op") == "add" else ""
    lesson = parse_lesson(about_room(entry, room)) if entry else None
    if lesson is None:
        return "other"
    if not lesson.homes:  # looks in vain alone (writes_evidence): right where nothing was picked
        return "right" if shown is None else "other"
    if shown is None:
        return "invented"
    if lesson.head == shown:
        return "right"
    return "wrong homes" if shown.startswith(f"{lesson.otype}: ") else "other"


def prompts_of(demos, missteps: int, rng) -> list[str]:
    from crl_jax.envs.alfworld_lessons import room_line
    from crl_jax.training.warmstart import demo_extractor_prompt, with_missteps
    pool = [a for d in demos for a in d.actions] or ["look"]
    out = []
    for d in demos:
        for copy in (d, cut_before_pick(d)):
            if copy is None:
                continue
            if missteps:
                copy = with_missteps(copy, missteps, rng, pool)
            out.append(demo_extractor_prompt(copy, room=room_line(d.observations[0])))
    return out


def main(argv=None) -> int:
    command = parse(__doc__, argv)
    from crl_jax.training.components import task_pool
    from crl_jax.training.tasks import household_split
    from crl_jax.training.warmstart import collect_demos
    from experiments.diagnostics.warm_start_probe import extractor_answers

    if household_split(command.cfg) is None or not command.cfg.experience.has_extractor:
        print("error: a households preset with an extractor is needed (env.households > 0, "
              "experience.mode with an extractor)", file=sys.stderr)
        return 2
    with built_run(command.cfg, "lesson_reading_") as run:
        sampling = dataclasses.replace(run.agent.sampling, temperature=0.0,
                                       max_new_tokens=command.max_new_tokens)
        answer = extractor_answers(run, sampling)
        src = run.train_sources[0]
        pool = task_pool(run.cfg, src)
        warm = dataclasses.replace(src, tasks=[t for t in src.tasks if t not in set(pool.tasks)])
        rng = np.random.default_rng(command.cfg.warm_start.seed)
        report = {}
        for name, games in (("warm start's households", warm), ("RL pool's households", pool)):
            tasks = [games.tasks[i] for i in rng.permutation(len(games.tasks))[:command.games]]
            demos = collect_demos(games.env_name, games.make, tasks,
                                  run.cfg.rollout.max_turns * 2, games.expert)
            prompts = prompts_of(demos, command.missteps, rng)
            verdicts = [verdict(a, p) for a, p in zip(answer(prompts), prompts)]
            shares = {k: verdicts.count(k) / len(verdicts)
                      for k in ("right", "invented", "wrong homes", "other")}
            report[name] = {"prompts": len(prompts), **shares}
            print(f"{name}: {len(prompts)} prompts ({len(demos)} games, whole and cut before "
                  f"the pick-up, {command.missteps} rejected actions each): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in shares.items()))
        write_report(report, command.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
