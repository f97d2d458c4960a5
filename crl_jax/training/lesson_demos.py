"""Guided demonstrations and extractor targets for households: lessons, not plans.

In a household (crl_jax/envs/alfworld_households.py) what carries from one
game to the next is where object types usually lie. The warm start teaches
the actor to read such a lesson, and the extractor to write one:

  lesson       the household's true lesson for the goal's object type,
               played by the informed expert, which looks at the lesson's
               homes first and searches where they are wrong (they are
               wrong at rate about 1 - home_rate, so the actor learns to
               trust a lesson as far as it holds);
  lessonpeer   the lesson of another household for the same type (another
               type where none has it), played by the searching expert,
               which ignores it: a lesson about another room;
  lessonswap   the same household's lesson for another of its goal types,
               ignored likewise: the line names another object.
  lessonseen   the lesson one other game of the household shows: where an
               object of the goal's type lay there, one home, played by the
               informed expert like ``lesson``. It is what the bank holds
               before merges give it votes (a lesson read from one episode),
               and it is right only as often as two games of the household
               agree, so the actor learns how far such a line holds.
  lessonfirst  the household's true lesson cut to its first home, played
               like ``lesson``: a line of one home as right as the true
               lesson's first, so an actor taught on it beside ``lesson``
               learns to read the first home whatever the line's length
               (taught on two homes alone it ignored lines of one).

The extractor's target for a trajectory (``trajectory_lesson``) is the
lesson it supports: where the goal's type was found, in the room its first
observation lists. A trajectory that never found it gives none (Return).
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from crl_jax.envs.alfworld_expert import PICK, AlfWorldEnvExpert, kind_of
from crl_jax.envs.alfworld_households import household_game, household_index
from crl_jax.envs.alfworld_lessons import (Lesson, about_room, first_home, goal_about,
                                           goal_object, lesson_steps, parse_lesson, read_evidence,
                                           read_homes, read_sightings, room_of, true_lesson,
                                           types_seen)
from crl_jax.rl.batch import Sample
from crl_jax.rl.prompts import EVERY_OBJECT, trajectory_text
from crl_jax.training.warmstart import (Demo, demo_extractor_prompt, extractor_response,
                                       play_expert, with_missteps)

LESSON_SOURCES = ("lesson", "lessonpeer", "lessonswap", "lessonseen", "lessonfirst")
# The sources played by the informed expert along the line they show.
READ_SOURCES = ("lesson", "lessonseen", "lessonfirst")
# The most rejected actions a noisy lesson pair shows: the actor's lost
# episodes at the 10-turn cap are mostly such steps. With 8 in each
# trajectory, the preset's extractor (taught on clean expert ones) invents a
# lesson where none shows for 0.41 of its prompts and reads 0.08 right
# (docs/FINDINGS.md, "Households: the extractor invented lessons").
LESSON_MISSTEPS = 8
# A PDDL fact placing an object: its type (the id's head) and receptacle id.
_IN_RECEPTACLE = re.compile(r"\(inReceptacle ([A-Za-z]+)_\S+ (\S+)\)")


class LessonBook:
    """The true lessons of a run's households (an alfworld_households.HouseholdSplit)."""

    def __init__(self, split):
        self.members = {h.index: h for h in split.members()[:split.households]}
        self.home_rate = split.home_rate

    def seen(self, record, rng: np.random.Generator) -> Lesson:
        """The lesson another game of ``record``'s household shows: the home
        of an object of the goal's type there, drawn among its copies (the
        household's true lesson if that game holds none)."""
        h = self.household(record)
        otype = record.params["object_target"]
        # A whole game of the household, so the placement law is the
        # generator's own. Its copies are read in the PDDL's order (the
        # _IN_RECEPTACLE), which alfworld_pddl.parse_problem's sets would lose:
        # the draw among them, and so the warm start, depends on that order.
        other = household_game(h, int(rng.integers(1 << 30)), self.home_rate)
        lying = [where for obj, where in _IN_RECEPTACLE.findall(other.pddl_problem)
                 if obj == otype and where in h.names]
        if not lying:
            return true_lesson(h, otype)
        return Lesson(otype.lower(), h.signature, (h.names[lying[int(rng.integers(len(lying)))]],))

    def household(self, record):
        return self.members[household_index(record.id)]

    def true(self, record) -> Lesson:
        return true_lesson(self.household(record), record.params["object_target"])

    def first(self, record) -> Lesson:
        """The true lesson naming its first home alone."""
        return first_home(self.true(record))

    def peer(self, record, rng: np.random.Generator) -> Lesson:
        own = household_index(record.id)
        otype = record.params["object_target"]
        others = [h for i, h in sorted(self.members.items()) if i != own]
        same = [h for h in others if h.home_names(otype)]
        pick = (same or others)[int(rng.integers(len(same or others)))]
        if same:
            return true_lesson(pick, otype)
        kinds = [t for t, _ in pick.homes]
        return true_lesson(pick, kinds[int(rng.integers(len(kinds)))])

    def swap(self, record, rng: np.random.Generator) -> Lesson | None:
        h = self.household(record)
        otype = record.params["object_target"]
        others = [t for t in h.goal_types if t.lower() != otype.lower()]
        if not others:
            return None
        return true_lesson(h, others[int(rng.integers(len(others)))])


def lesson_demo(demo: Demo, source: str, make, max_turns: int, book: LessonBook,
                rng: np.random.Generator) -> Demo:
    """The guided demonstration of ``demo``'s game for a lesson source."""
    env = make()
    try:
        record = env.games[demo.task]
        if source in READ_SOURCES:  # played by the informed expert
            lesson = (book.seen(record, rng) if source == "lessonseen" else
                      book.first(record) if source == "lessonfirst" else book.true(record))
            steps = lesson_steps(lesson, record.params.get("parent_target", ""))
            played = play_expert(env, demo.task, AlfWorldEnvExpert(steps), max_turns,
                                 demo.env_name)
            return dataclasses.replace(played, experience=lesson.text, source=source)
        lesson = book.peer(record, rng) if source == "lessonpeer" else book.swap(record, rng)
        if lesson is None:  # one goal type only: another room's lesson instead
            lesson = book.peer(record, rng)
        return dataclasses.replace(demo, experience=lesson.text, source=source)
    finally:
        env.close()


def trajectory_lesson(demo: Demo, keep: int = 2) -> str | None:
    """The lesson a trajectory supports: the goal's object type was picked up
    from these receptacles, the first pick's first (at most ``keep``). None
    when it never was."""
    if not demo.observations or not demo.goal:
        return None
    goal_type = _goal_type(demo)
    found: list[str] = []
    for obs in demo.observations[1:]:
        m = PICK.match(obs.strip())
        if m and kind_of(m.group(1)) == goal_type and m.group(2) not in found:
            found.append(m.group(2))
    if not found:
        return None
    return Lesson(goal_type, room_of(demo.observations[0]), tuple(found[:keep])).text


def _goal_type(demo: Demo) -> str:
    """The goal's object type ("put a hot apple in fridge" -> "apple"): the
    first object the demonstration takes whose type the goal names."""
    words = set(re.findall(r"[a-z]+", demo.goal.lower()))
    for obs in demo.observations[1:]:
        m = PICK.match(obs.strip())
        if m and kind_of(m.group(1)) in words:
            return kind_of(m.group(1))
    return ""


def lesson_sft_samples(demos: Sequence[Demo], tokenizer, rng: np.random.Generator,
                       failure_fraction: float = 0.5, shown_fraction: float = 0.5,
                       max_shown: int = 2, room_jitter: float = 0.0, write_room: bool = True,
                       wrong_picks: float = 0.0, missteps: float = 0.0,
                       read_shown: bool = False, evidence: bool = False,
                       sightings: bool = False, other_types: int = 0,
                       places: bool = False) -> list[Sample]:
    """The extractor's warm-start pairs for households (in place of
    warmstart.extractor_sft_samples' plans): each trajectory, and with
    probability ``failure_fraction`` a copy cut short as a lost episode, and
    with probability ``wrong_picks`` a copy that picks up another type
    (``wrong_pick``), -> the lesson it supports; the prompt states the room
    and, with probability ``shown_fraction``, lists 1-``max_shown`` other
    trajectories' lessons. With probability ``room_jitter`` a pair's room is
    re-drawn (``jittered_room``) in its prompt and its lesson alike. With
    probability ``missteps`` each of those copies is also shown with 1 to
    LESSON_MISSTEPS actions the game rejected put into it
    (warmstart.with_missteps: a take too early or from the wrong place, a
    wrong number, "Nothing happens."), the lesson it supports unchanged, as
    the actor's trajectories in RL have such steps and the expert's never.
    With ``read_shown`` a lesson states only the pick-ups the prompt shows
    (``shown_lesson``), and with ``evidence`` where it looked in vain too,
    a lost copy its looks in vain alone (``shown_evidence``); with
    ``sightings`` as well, the prompts name the goal's objects each clipped
    observation showed and the evidence counts them (read_sightings).
    With ``other_types`` as well (and ``sightings``, ``read_shown`` and
    ``evidence``), each copy also gives up to that many pairs about other
    types its looks showed (``_other_type_prompts``). With ``places``
    the sightings' tags name where they were seen (experience.sighting_places).
    Without ``write_room`` the answered lessons end before their room (the
    shown ones keep it, as the bank's entries do)."""

    known = [x for d in demos if (x := trajectory_lesson(d))]  # shown as the bank holds them
    pool = [a for d in demos for a in d.actions] or ["look"]
    types = sorted({t for d in demos for t in _picked_types(d)})
    samples = []
    for d in demos:
        for shown_demo in _copies(d, rng, failure_fraction, wrong_picks, types, missteps, pool):
            shown = _shown_lessons(known, rng, shown_fraction, max_shown)
            room, lesson = room_of(d.observations[0]), trajectory_lesson(shown_demo)
            if room_jitter and rng.random() < room_jitter:
                room = jittered_room(room, _named(d), rng)
                lesson = lesson and dataclasses.replace(parse_lesson(lesson), room=room).text
            prompt = demo_extractor_prompt(shown_demo, shown=shown, room=", ".join(room),
                                           focus=goal_object(d.goal) if sightings else "",
                                           places=places)
            if read_shown and evidence:
                lesson = shown_evidence(prompt, room, sightings)
            elif read_shown and lesson:
                lesson = shown_lesson(prompt, parse_lesson(lesson))
            pairs = [(prompt, lesson)]
            if other_types and sightings and read_shown and evidence:
                pairs += [(p, shown_evidence(p, room, True))
                          for p in _other_type_prompts(shown_demo, shown, room, other_types, rng,
                                                       places)]
            samples += [_lesson_sample(p, lesson, write_room, tokenizer) for p, lesson in pairs]
    return samples


def _shown_lessons(known: Sequence[str], rng: np.random.Generator, fraction: float,
                   most: int) -> list[str]:
    """With probability ``fraction``, 1-``most`` of the ``known`` lessons
    drawn without replacement, as a prompt lists the bank's; else none."""
    if not (known and rng.random() < fraction):
        return []
    k = int(rng.integers(1, most + 1))
    return [known[i] for i in rng.choice(len(known), size=min(k, len(known)), replace=False)]


def _lesson_sample(prompt: str, lesson: str | None, write_room: bool, tokenizer) -> Sample:
    """A prompt and its answered ``lesson`` (without its room unless
    ``write_room``) as one training sequence."""
    if lesson is not None and not write_room:
        parsed = parse_lesson(lesson)
        lesson = parsed.head + parsed.evidence_text
    p = tokenizer.encode(prompt)
    r = tokenizer.encode(extractor_response(lesson)) + [tokenizer.eos_id]
    return Sample(p + r, [0] * len(p) + [1] * len(r))


def _other_type_prompts(demo: Demo, shown: Sequence[str], room: Sequence[str], n: int,
                        rng: np.random.Generator, places: bool = False) -> list[str]:
    """Consolidation prompts about up to ``n`` object types ``demo``'s looks
    showed other than its goal's, drawn at random: each with the goal
    restated about that type and the clips naming that type's objects, as
    experience.sightings_of=each asks (training/step.episode_records)."""
    every = trajectory_text(demo.actions, demo.observations[1:], focus=EVERY_OBJECT)
    others = [t for t in types_seen(demo.goal, every) if t != goal_object(demo.goal)]
    if not others:
        return []
    picked = sorted(rng.choice(len(others), size=min(n, len(others)), replace=False))
    return [demo_extractor_prompt(dataclasses.replace(demo, goal=goal_about(demo.goal, others[i])),
                                  shown=shown, room=", ".join(room), focus=others[i],
                                  places=places)
            for i in picked]


def _copies(d: Demo, rng: np.random.Generator, failure_fraction: float, wrong_picks: float,
            types: Sequence[str], missteps: float, pool: Sequence[str]) -> list[Demo]:
    """``d`` and the copies lesson_sft_samples shows of it: cut short as a
    lost episode, ending at a wrong pick, and any of those with rejected
    actions put in (the random draws in that order)."""
    copies = [d]
    if len(d.actions) > 1 and rng.random() < failure_fraction:
        n = int(rng.integers(1, len(d.actions)))
        copies.append(dataclasses.replace(d, actions=d.actions[:n],
                                          observations=d.observations[:n + 1], won=False))
    if wrong_picks and rng.random() < wrong_picks and (wrong := wrong_pick(d, types, rng)):
        copies.append(wrong)
    if missteps:  # no draw at 0
        copies += [with_missteps(c, int(rng.integers(1, LESSON_MISSTEPS + 1)), rng, pool)
                   for c in list(copies) if c.actions and rng.random() < missteps]
    return copies


def shown_evidence(prompt: str, room: Sequence[str], sightings: bool = False) -> str | None:
    """The lesson with its evidence that a consolidation ``prompt`` shows
    (alfworld_lessons.read_evidence on its "traj:" line: a pick-up's home
    and the looks in vain before it, or the looks in vain of an episode
    that picked nothing up; with ``sightings``, read_sightings: what each
    look showed), about ``room``; None where it shows neither."""
    read = (read_sightings if sightings else read_evidence)(*prompt_lines(prompt, "goal", "traj"))
    return read and about_room(read, ", ".join(room))


def shown_lesson(prompt: str, lesson: Lesson) -> str | None:
    """``lesson`` with the homes its consolidation ``prompt`` shows (the
    pick-ups in its "traj:" line, which the prompt clips at
    prompts.EXTRACTOR_TRAJ_CHARS), or None when it shows none: a long
    search's pick-up past the clip is no evidence the extractor can read,
    and a target naming it teaches the extractor to write homes it cannot
    see."""
    homes = read_homes(*prompt_lines(prompt, "goal", "traj"), len(lesson.homes))
    return dataclasses.replace(lesson, homes=homes).text if homes else None


def prompt_lines(prompt: str, *names: str) -> tuple[str, ...]:
    """The values of a compact consolidation prompt's ``name: ...`` lines
    (goal, room, traj: the trajectory as the prompt clips it)."""
    return tuple(re.search(rf"^{name}: (.*)$", prompt, re.M).group(1) for name in names)


def jittered_room(room: Sequence[str], keep: set[str], rng: np.random.Generator,
                  drop: float = 0.3, most_added: int = 3) -> tuple[str, ...]:
    """Another room like ``room``: each receptacle outside ``keep`` dropped
    with probability ``drop``, then 0-``most_added`` receptacles added (a kind
    of the room with the next free number), sorted as a room line is."""
    out = {r for r in room if r in keep or rng.random() >= drop}
    kinds = sorted({r.rsplit(" ", 1)[0] for r in room})
    for _ in range(int(rng.integers(0, most_added + 1))):
        kind = kinds[int(rng.integers(len(kinds)))]
        n = 1
        while f"{kind} {n}" in out or f"{kind} {n}" in room:
            n += 1
        out.add(f"{kind} {n}")
    return tuple(sorted(out))


def wrong_pick(demo: Demo, types: Sequence[str], rng: np.random.Generator) -> Demo | None:
    """``demo`` up to its first pick-up of the goal's type, which takes an
    object of another of ``types`` from the same receptacle instead; the game
    ends there, lost (the lesson it supports: none). None when the demo never
    picks up the goal's type or no other type is known."""
    goal = _goal_type(demo)
    others = [t for t in types if t != goal]
    for i, obs in enumerate(demo.observations[1:]):
        m = PICK.match(obs.strip())
        if m and kind_of(m.group(1)) == goal and others:
            other = f"{others[int(rng.integers(len(others)))]} 1"
            return dataclasses.replace(
                demo, actions=[*demo.actions[:i], f"take {other} from {m.group(2)}"],
                observations=[*demo.observations[:i + 1],
                              f"You pick up the {other} from the {m.group(2)}."], won=False)
    return None


def _picked_types(demo: Demo) -> set[str]:
    return {kind_of(m.group(1)) for obs in demo.observations[1:] if (m := PICK.match(obs.strip()))}


def _named(demo: Demo) -> set[str]:
    """The receptacles a demonstration's actions or pick-ups name."""
    text = " ".join(demo.actions) + " " + " ".join(demo.observations[1:])
    return set(re.findall(r"[a-z]+ \d+", text))
