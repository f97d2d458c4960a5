"""Guided demonstrations whose actions depend on their experience line.

A tiny actor uses its experience line only if its warm start made the line
predictive of the next action. A guided demonstration therefore draws its
line from a mix of sources (``warm_start.guided_source``, e.g.
"own:2,noisy1:1,peer:1"):

  own      the game's own plan, played by the informed expert, which goes
           first where the plan says (ALFWorld: crl_jax.envs.alfworld_expert);
  noisyK   the own plan with K steps made wrong: the informed expert follows
           the right steps and searches where a step is wrong;
  peer     the plan of another game of the same task type, played by the
           searching expert, which ignores it (a line to learn to distrust);
  peerseen (ALFWorld) the same, from a game whose taken objects this game
           also shows (under the same names), none of them the type the
           goal asks for: the line names a thing the actor will see and must
           not take. A random peer's objects are rarely in view, so without
           it the warm start never shows a line naming a visible wrong
           object; on held-out games the actor then took it. Measured on
           one warm start, this source did not stop those takes
           (docs/FINDINGS.md, "Reading diagnostics");
  swap     (ALFWorld) the game's own plan with the goal's object swapped
           for another object the game shows (one lying where the goal's
           object is taken, when there is one), goal included, played by
           the searching expert, which ignores it. Its walk is the own
           plan's, so the only thing that tells it from an own line is
           whose object it names: the one lesson that makes the actor
           compare the line's goal with its own.

In environments without an informed expert (MiniHack's mazes, key rooms and
rivers, Sokoban, WebShop, SWE) the demonstration of the game itself follows
its own plan (the plan is made of its actions), so "own" and "noisyK" reuse
it with the (corrupted) line.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Callable, Sequence

import numpy as np

from crl_jax.envs.alfworld_expert import (STEP_PLACE, AlfWorldEnvExpert, kind_of, parse_seen,
                                          room_receptacles)
from crl_jax.training.lesson_demos import LESSON_SOURCES, LessonBook, lesson_demo
from crl_jax.training.warmstart import (FOREIGN_SOURCES, Demo, plan_entry,
                                       plan_steps, play_expert)

_TAKE = re.compile(r"^take (.+?) from ")
# Sources of a game's plan (or another game's); noisyK and the households'
# LESSON_SOURCES come beside them.
PLAN_SOURCES = ("own", "peer", "peerseen", "swap")
_SOURCE = re.compile(rf"^({'|'.join(PLAN_SOURCES + LESSON_SOURCES)}|noisy([1-9]\d*))$")


def parse_mix(text: str) -> list[tuple[str, float]]:
    """"own:2,noisy1:1,peer:1" -> [(source, probability), ...]."""
    mix = []
    for part in text.split(","):
        name, _, weight = part.strip().partition(":")
        if not _SOURCE.match(name):
            raise ValueError(f"guided source {name!r}: valid are {', '.join(PLAN_SOURCES)}, "
                             f"noisyK (K >= 1) and, with households, "
                             f"{', '.join(LESSON_SOURCES)}, as 'name:weight' pairs separated "
                             "by commas")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"guided source {part!r}: the weight must be a number") from None
        if w < 0:
            raise ValueError(f"guided source {part!r}: the weight must be >= 0")
        mix.append((name, w))
    total = sum(w for _, w in mix)
    if not mix or total <= 0:
        raise ValueError(f"guided source {text!r} gives no source a positive weight")
    return [(name, w / total) for name, w in mix]


def noise_of(source: str) -> int:
    m = _SOURCE.match(source)
    return int(m.group(2)) if m and m.group(2) else 0


def corrupt_plan(entry: str, k: int, rng: np.random.Generator,
                 receptacles: Sequence[str] = (), alternatives: Sequence[str] = ()) -> str:
    """``entry`` with exactly ``min(k, units)`` of its steps made wrong. A
    step that names a receptacle (ALFWorld) gets another receptacle of the
    room, the same kind first ("countertop 2" -> "countertop 1"), so it sends
    the actor to the wrong place; any other step becomes another action. The
    walk and the opening that lead to a step's receptacle ("go to cabinet 2 >
    open cabinet 2 > take soapbar 1 from cabinet 2") are one unit with it and
    go wrong together, so a wrong plan is still a consistent one."""
    goal, _, _ = entry.partition(": ")
    steps = plan_steps(entry)
    units = plan_units(steps)
    picks = rng.choice(len(units), size=min(k, len(units)), replace=False) if units else []
    for u in sorted(int(p) for p in picks):
        *lead, main = units[u]
        wrong = _wrong_step(steps[main], rng, receptacles, alternatives)
        right_place, wrong_place = _place(steps[main]), _place(wrong)
        for i in lead if wrong_place else ():  # the walk/opening follow it to its new place
            steps[i] = steps[i][: -len(right_place)] + wrong_place
        steps[main] = wrong
    return f"{goal}: " + " > ".join(steps)


def plan_units(steps: Sequence[str]) -> list[list[int]]:
    """The plan's steps grouped as units: a step with the "go to R" / "open R"
    steps right before it that lead to its receptacle R; other steps alone."""
    units, lead = [], []
    for i, step in enumerate(steps):
        if step.startswith(("go to ", "open ")):
            lead.append(i)
            continue
        place, attached = _place(step), []
        while lead and place and _place(steps[lead[-1]]) == place:
            attached.insert(0, lead.pop())
        units.extend([j] for j in lead)
        units.append(attached + [i])
        lead = []
    units.extend([j] for j in lead)
    return units


def _place(step: str) -> str:
    m = STEP_PLACE.match(step)
    return m.group(2) if m else ""


def _wrong_step(step: str, rng, receptacles, alternatives) -> str:
    m = STEP_PLACE.match(step)
    if m and len(receptacles) > 1:
        head, rec = m.groups()
        kind = kind_of(rec)
        others = [r for r in receptacles if r != rec]
        same = [r for r in others if kind_of(r) == kind]
        pool = same or others
        return head + pool[int(rng.integers(len(pool)))]
    others = [a for a in alternatives if a != step] or [f"{step} again"]
    return others[int(rng.integers(len(others)))]


def informed(env_name: str) -> bool:
    """Whether ``env_name`` has an expert that follows a plan: ALFWorld's
    goes first where the plan says; in MiniHack's open rooms it walks the
    plan's moves, the straight way to the stairs."""
    return env_name.startswith(("alfworld", "MiniHack-Room-"))


def taken_objects(demo: Demo) -> set[str]:
    """The objects ``demo`` took ("take apple 1 from ..." -> "apple 1")."""
    return {m.group(1) for a in demo.actions if (m := _TAKE.match(a))}


def seen_peers(demo: Demo, peers: Sequence[Demo]) -> list[Demo]:
    """The peers whose taken objects ``demo``'s game shows under the same
    names, none of them of a type ``demo`` takes (the goal's)."""
    seen = {x for obs in demo.observations for x in parse_seen(obs)}
    own_types = {kind_of(x) for x in taken_objects(demo)}
    out = []
    for p in peers:
        taken = taken_objects(p)
        if taken and taken <= seen and not {kind_of(x) for x in taken} & own_types:
            out.append(p)
    return out


def swapped_plan(demo: Demo, rng: np.random.Generator) -> str | None:
    """``demo``'s own plan entry naming another object than its goal's: each
    taken object ("mug 1") is replaced by an object of one other type the
    game shows, preferably where the goal's object was taken, and the goal's
    type word by that type ("put a mug in ..." -> "put a cellphone in ...").
    None when the game shows no object of another type."""
    taken = list(dict.fromkeys(m.group(1) for a in demo.actions if (m := _TAKE.match(a))))
    if not taken:
        return None
    own_type, entry = kind_of(taken[0]), plan_entry(demo)
    at_take = [o for i, a in enumerate(demo.actions) if _TAKE.match(a)
               for o in parse_seen(demo.observations[i])]
    anywhere = [o for obs in demo.observations for o in parse_seen(obs)]
    count = collections.Counter(kind_of(o) for o in set(anywhere))  # names of each type
    types = []
    for pool in (at_take, anywhere):  # a type the plan names otherwise (a lamp) is no goal's
        found = {kind_of(o) for o in pool} - {own_type}
        found = {t for t in found if not re.search(rf"\b{re.escape(t)}\b", entry)}
        # as many of them as the goal takes (two for "put two ..."), when the game has them
        types = sorted(t for t in found if count[t] >= len(taken)) or sorted(found)
        if types:
            break
    if not types:
        return None
    other = types[int(rng.integers(len(types)))]
    names = sorted({o for o in anywhere if kind_of(o) == other})
    mapping = {x: names[i % len(names)] for i, x in enumerate(taken)}
    goal, _, steps = entry.partition(": ")
    for old, new in mapping.items():
        steps = re.sub(rf"\b{re.escape(old)}\b", new, steps)
    # "mug" and "mugs" in the goal, not the "toiletpaper" of "toiletpaperhanger"
    goal = re.sub(rf"\b{re.escape(own_type)}(?=s?\b)", other, goal)
    return f"{goal}: {steps}"


def plan_expert(env_name: str, steps: Sequence[str]):
    """The informed expert of ``env_name`` following ``steps``."""
    if env_name.startswith("alfworld"):
        return AlfWorldEnvExpert(steps)
    from crl_jax.envs.minihack_expert import MiniHackPlanExpert  # needs nle
    return MiniHackPlanExpert(steps)


def plan_places(env_name: str, first_observation: str) -> list[str]:
    """The places a wrong plan step may name instead (ALFWorld: the room's
    receptacles; elsewhere none, so a wrong step is another action)."""
    return room_receptacles(first_observation) if env_name.startswith("alfworld") else []


def guided_demo(demo: Demo, source: str, make: Callable[[], object], max_turns: int,
                peers: Sequence[Demo], rng: np.random.Generator,
                alternatives: Sequence[str] = (), book: LessonBook | None = None) -> Demo:
    """The guided demonstration of ``demo``'s game for ``source`` (lesson
    sources need ``book``, the households' lessons)."""
    if source in LESSON_SOURCES:
        if book is None:
            raise ValueError(f"guided source {source!r} needs households (env.households > 0)")
        return lesson_demo(demo, source, make, max_turns, book, rng)
    if source == "swap":
        line = swapped_plan(demo, rng) if demo.env_name.startswith("alfworld") else None
        if line is not None:
            return dataclasses.replace(demo, experience=line, source=source)
        # nothing else to name (or no objects, outside ALFWorld): another game's plan
    if source in FOREIGN_SOURCES:
        others = [p for p in peers if p is not demo] or [demo]
        if source == "peerseen":
            others = seen_peers(demo, others) or others
        line = plan_entry(others[int(rng.integers(len(others)))])
        return dataclasses.replace(demo, experience=line, source=source)
    k = noise_of(source)
    if not informed(demo.env_name):
        line = plan_entry(demo)
        if k:
            line = corrupt_plan(line, k, rng, (), alternatives)
        return dataclasses.replace(demo, experience=line, source=source)
    env = make()
    try:
        clean = own_plan_demo(env, demo, max_turns)
        line = plan_entry(clean)
        if not k:
            return dataclasses.replace(clean, experience=line, source=source)
        line = corrupt_plan(line, k, rng, plan_places(demo.env_name, demo.observations[0]),
                            alternatives)
        played = play_expert(env, demo.task, plan_expert(demo.env_name, plan_steps(line)),
                             max_turns, demo.env_name)
    finally:
        env.close()
    return dataclasses.replace(played, experience=line, source=source)


def own_plan_demo(env, demo: Demo, max_turns: int) -> Demo:
    """The game played by the informed expert along the searching expert's
    plan: the direct path, without the searching demo's detours (MiniHack:
    the king moves from the start to the stairs the search found). Its plan
    entry is the game's own plan (what an ideal bank entry says)."""
    steps = plan_steps(plan_entry(demo))
    if demo.env_name.startswith("MiniHack-"):
        from crl_jax.envs.minihack_expert import direct_moves, goal_of  # needs nle
        start, stairs = goal_of(env, demo.task, demo.actions)
        steps = direct_moves(start, stairs) if stairs is not None else steps
    return play_expert(env, demo.task, plan_expert(demo.env_name, steps), max_turns,
                       demo.env_name)


def guided_demos(demos: Sequence[Demo], make: Callable[[], object], mix: str,
                 guided_fraction: float, max_turns: int, rng: np.random.Generator,
                 on_demo: Callable[[], None] | None = None, contrast: bool = False,
                 book: LessonBook | None = None) -> list[Demo]:
    """The actor's warm-start demonstrations: each won searching demo is free
    (no line) or, with probability ``guided_fraction``, replaced by a guided
    one from the mix. Lost guided replays are dropped (they teach nothing).

    With ``contrast``, a guided game gives two demonstrations instead of one:
    one whose line the expert follows (a source drawn from the mix's own and
    noisyK) and one whose line it ignores (drawn from its FOREIGN_SOURCES).
    Their first prompts are the same but for the line, and their actions
    differ wherever the plan spares a search, so what tells the two apart is
    exactly what a reading actor must check: whether the line is its own
    game's plan. (Each guided game counts twice: guided_fraction 1/3 keeps
    half the demos free.)"""
    sources = parse_mix(mix)
    sides = [sources]
    if contrast:
        follow = [(s, p) for s, p in sources if s not in FOREIGN_SOURCES]
        ignore = [(s, p) for s, p in sources if s in FOREIGN_SOURCES]
        if not follow or not ignore:
            raise ValueError(f"contrasting guided demos need a source the expert follows (own, "
                             f"noisyK) and one it ignores ({', '.join(FOREIGN_SOURCES)}); "
                             f"the mix {mix!r} has only one kind")
        sides = [follow, ignore]
    # Each side's names and probabilities, built once. parse_mix normalised the
    # whole mix; only a contrast side needs it again (dividing the whole mix
    # by its float sum could move a draw and change the preset's warm starts).
    draws = [([s for s, _ in side], np.array([p for _, p in side])) for side in sides]
    draws = [(names, probs / probs.sum() if contrast else probs) for names, probs in draws]
    wins = [d for d in demos if d.won]
    by_type: dict[str, list[Demo]] = {}
    for d in wins:
        by_type.setdefault(d.task_type, []).append(d)
    alternatives = sorted({a for d in wins for a in d.actions})
    out = []
    for d in wins:
        if rng.random() < guided_fraction:
            for names, probs in draws:
                source = names[int(rng.choice(len(names), p=probs))]
                g = guided_demo(d, source, make, max_turns, by_type[d.task_type], rng,
                                alternatives, book)
                if g.won:
                    out.append(g)
        else:
            out.append(d)
        if on_demo is not None:
            on_demo()
    return out
