"""Greedy next-action accuracy of a preset's warm-started actor on the
expert's states (see crl_jax/diagnostics/step_accuracy.py), with a chosen
experience line in every prompt: does the actor read it?

    python experiments/diagnostics/actor_step_accuracy.py --config=alfworld_cpu [--exp=own] [--games=48] [--section.key=value ...]

--exp: none (no line), own (the game's own plan), peer (the plan of another
game of the same task type), noisy:K (the own plan with K wrong steps),
lesson (households only: the household's true lesson for the goal's type,
against the informed expert that reads it, crl_jax/training/lesson_demos.py),
lessonseen (households only: the one home another game of the household
shows, as a bank's lesson read from one episode states it, against the
informed expert that reads it), lessonfirst (the true lesson cut to its
first home, likewise), lessonhidden (the states of --exp=lesson with no
line in the prompt: the control of its row "go, where the line says", the
walks the lesson names), or
several of them separated by commas (--exp=none,own,peer: one warm start
built or loaded, one table per line). In
ALFWorld the reference is the informed expert following the game's own plan
(crl_jax/training/guided_demos.py), so with the own plan every expert action
is predictable from the line; elsewhere it is the searching expert. Tables
for the RL pool's games and for held-out games. It builds the run as
experiments/run.py would (warm start included; the preset's
warm_start.cache_dir is reused).
"""
from __future__ import annotations

import dataclasses
import re
import sys


import numpy as np

from experiments.diagnostics.warm_start_probe import built_run, parse, write_report

_EXP = re.compile(r"^(none|own|peer|lesson|lessonseen|lessonfirst|lessonhidden"
                  r"|noisy:([1-9]\d*))$")


def line_maker(exp: str, demos, seed: int = 0):
    """demo -> the experience line --exp asks for."""
    from crl_jax.training.guided_demos import corrupt_plan, plan_places
    from crl_jax.training.lesson_demos import READ_SOURCES
    from crl_jax.training.warmstart import plan_entry

    m = _EXP.match(exp)
    rng = np.random.default_rng(seed)
    by_type = {}
    for d in demos:
        by_type.setdefault(d.task_type, []).append(d)

    def line(d):
        if m.group(1) in READ_SOURCES:  # their demos carry the line
            return d.experience
        if m.group(1) in ("none", "lessonhidden"):
            return None
        if m.group(1) == "peer":
            others = [p for p in by_type[d.task_type] if p is not d] or [d]
            return plan_entry(others[int(rng.integers(len(others)))])
        own = plan_entry(d)
        if m.group(2):
            actions = sorted({a for p in demos for a in p.actions})
            return corrupt_plan(own, int(m.group(2)), rng,
                                plan_places(d.env_name, d.observations[0]), actions)
        return own

    return line


def reference_demos(src, tasks, max_turns: int):
    """The expert's games: the informed expert along the game's own plan
    where there is one (ALFWorld, MiniHack's rooms), else the searching expert."""
    from crl_jax.training.guided_demos import informed, own_plan_demo
    from crl_jax.training.warmstart import collect_demos

    demos = collect_demos(src.env_name, src.make, tasks, max_turns, src.expert)
    if not informed(src.env_name):
        return demos
    env = src.make()
    try:
        return [own_plan_demo(env, d, max_turns) for d in demos]
    finally:
        env.close()


def lesson_demos(src, demos, cfg, max_turns: int, source: str = "lesson"):
    """The informed expert's games along each game's household lesson
    (``source``: lesson, lessonseen or lessonfirst, see
    crl_jax/training/lesson_demos.py; lessonhidden: lesson's games)."""
    from crl_jax.training.lesson_demos import LessonBook, lesson_demo
    from crl_jax.training.tasks import household_split

    split = household_split(cfg)
    if split is None:
        raise SystemExit(f"error: --exp={source} needs a households preset (env.households > 0)")
    book, rng = LessonBook(split), np.random.default_rng(0)
    source = "lesson" if source == "lessonhidden" else source
    return [lesson_demo(d, source, src.make, max_turns, book, rng) for d in demos]


def main(argv=None) -> int:
    from crl_jax.diagnostics.step_accuracy import (env_verdict, expert_views, format_report,
                                                   step_accuracy)
    from crl_jax.rl import prompts
    from crl_jax.training.tasks import DEMO_TURNS_FACTOR, episode_cap
    from models.sampling_ops import strip_stop_tokens

    command = parse(__doc__, argv)
    lines = command.exp.split(",")
    if not all(_EXP.match(e) for e in lines):
        print(f"error: --exp={command.exp!r}: valid are none, own, peer, lesson, lessonseen, "
              "lessonfirst, lessonhidden, noisy:K, or several of them separated by commas",
              file=sys.stderr)
        return 2
    with built_run(command.cfg, "step_accuracy_") as run:
        r = run.cfg.rollout
        greedy = dataclasses.replace(run.engine.sampling, temperature=0.0)

        def propose(views):
            ids = [run.engine.prompt_ids(v) for v in views]
            res = run.sampler.generate(ids, greedy, rng=0, decode=run.tokenizer.decode)
            # the action a rollout would take from each answer (None: none in it)
            return [prompts.parse_action(run.tokenizer.decode(
                strip_stop_tokens(res.tokens[j], greedy)), r.format) for j in range(len(ids))]

        report = {}
        turns = episode_cap(run.cfg) * DEMO_TURNS_FACTOR
        games = {"pool": run.rl_sources, "held-out": run.eval_sources}
        for where, sources in games.items():
            for src in sources:  # a mixture gets one table per environment
                demos = reference_demos(src, src.tasks[:command.games], turns)
                accepts = env_verdict(src.make)  # one environment for every line's states
                played = {}  # lesson source -> its games (lessonhidden replays lesson's)
                for exp in lines:
                    source = "lesson" if exp == "lessonhidden" else exp
                    if exp.startswith("lesson") and source not in played:
                        played[source] = lesson_demos(src, demos, run.cfg, turns, source)
                    shown = played.get(source, demos)
                    states = expert_views(shown, r.history, r.list_actions,
                                          r.show_first_observation, line_maker(exp, shown))
                    stats = step_accuracy(states, propose, accepts=accepts)
                    print(f"\n{where} games of {src.env_name}, experience line: {exp} "
                          f"({sum(d.won for d in demos)}/{len(demos)} expert games won, "
                          f"{len(states)} states)")
                    print(format_report(stats))
                    key = f"{where}/{src.env_name}"
                    if len(lines) > 1:
                        key += f"/{exp}"
                    report[key] = {k: v.as_dict() for k, v in stats.items()}
        write_report(report, command.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
