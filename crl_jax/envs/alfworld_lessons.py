"""Lessons about a household: where an object type is usually found.

A plan ("put a mug in cabinet: go to countertop 2 > take mug 1 from ...")
solves one game. A lesson states what carries to the next game of the same
room: the object type, where that type was found, most often first, and the
room it is about (the receptacles its first observation lists):

    mug: go to countertop 2 > go to sinkbasin 1 (room: cabinet 1, countertop 1, ...)

Title (the type, before ": ") and content, like every entry. The homes are
written as the walks to them because a tiny actor copies a step it can read
verbatim and does not compose one from a receptacle's name
(docs/FINDINGS.md, "Reading diagnostics"); the room comes last, so a prompt
that clips a long line loses part of the room, not the homes. The informed
expert reads the homes as where to look first (``lesson_steps``), so a
lesson that is right spares the search and one that is wrong costs the
detour.
"""
from __future__ import annotations

import dataclasses
import re

from crl_jax.envs.alfworld_expert import room_receptacles
from crl_jax.envs.alfworld_households import Household
from crl_jax.envs.alfworld_text import objects_listed, place_of_look

_LESSON = re.compile(r"^(?P<otype>[a-z]+): (?P<homes>[^(]+?) \(room: (?P<room>[^)]*)\)"
                     r"(?: \(votes: (?P<votes>\d+(?:, \d+)*)\))?"
                     r"(?: \(evidence: (?P<evidence>[^)]*)\))?$")
# One receptacle's evidence: "cabinet 1 2/5", found there in 2 of the 5
# episodes that looked there.
_LOOKS = re.compile(r"^(?P<recep>[a-z]+ \d+) (?P<found>\d+)/(?P<looked>\d+)$")
_EVIDENCE_TAIL = re.compile(r" \(evidence: [^)]*\)$")
# The head of a lesson with evidence but no home yet: an episode that looked
# in vain and picked nothing up (experience.merger=lesson_evidence). Readers
# never see it (lesson_as_read gives ""); a merge adds its looks.
NO_HOME = "no home yet"


@dataclasses.dataclass(frozen=True)
class Lesson:
    otype: str                 # "mug"
    room: tuple[str, ...]      # the receptacles the room lists, sorted
    homes: tuple[str, ...]     # where the type lies, most often first
    # The evidence for each home, kept by experience.merger=lesson_votes (the
    # merged lesson's votes, so the next merge adds to them); () otherwise.
    votes: tuple[int, ...] = ()
    # (receptacle, episodes that found the type there, episodes that looked
    # there), kept by experience.merger=lesson_evidence: where the type was
    # not is evidence too, so a home the actor habitually looks at first and
    # finds a copy in now and then does not outvote the home that holds it
    # most often (alfworld_lesson_merge.rank_by_evidence); () otherwise.
    evidence: tuple[tuple[str, int, int], ...] = ()

    @property
    def head(self) -> str:
        """The type and homes, without the room ("mug: go to countertop 2");
        a lesson of looks in vain alone names no home (NO_HOME)."""
        if not self.homes:
            return f"{self.otype}: {NO_HOME}"
        return f"{self.otype}: " + " > ".join(f"go to {h}" for h in self.homes)

    @property
    def text(self) -> str:
        votes = f" (votes: {', '.join(map(str, self.votes))})" if self.votes else ""
        return f"{self.head} (room: {', '.join(self.room)}){votes}{self.evidence_text}"

    @property
    def evidence_text(self) -> str:
        """" (evidence: cabinet 1 2/5, drawer 1 0/3)", or "" without evidence."""
        if not self.evidence:
            return ""
        return " (evidence: " + ", ".join(f"{r} {f}/{n}" for r, f, n in self.evidence) + ")"


def parse_lesson(text: str) -> Lesson | None:
    """The Lesson a text states; None for anything else (a plan, malformed text)."""
    m = _LESSON.match(text.strip())
    if not m:
        return None
    room = tuple(r.strip() for r in m.group("room").split(","))
    homes = _homes(m.group("homes"))
    votes = tuple(int(v) for v in m.group("votes").split(", ")) if m.group("votes") else ()
    looks = [_LOOKS.match(x.strip()) for x in (m.group("evidence") or "").split(",") if x.strip()]
    if not (homes or looks) or not all(_is_name(r) for r in room + homes) or \
            (votes and len(votes) != len(homes)) or not all(looks):
        return None
    evidence = tuple((x.group("recep"), int(x.group("found")), int(x.group("looked")))
                     for x in looks)
    return Lesson(m.group("otype"), room, homes, votes, evidence)


def _homes(walks: str) -> tuple[str, ...]:
    """The homes a lesson's head names ("go to a 1 > go to b 2"; NO_HOME: none)."""
    if walks.strip() == NO_HOME:
        return ()
    return tuple(h.strip().removeprefix("go to ").strip() for h in walks.split(" > ") if h.strip())


def _is_name(text: str) -> bool:
    return re.fullmatch(r"[a-z]+ \d+", text) is not None


_LESSON_HEAD = re.compile(r"^(?P<otype>[a-z]+): (?P<homes>go to [a-z]+ \d+(?: > go to [a-z]+ \d+)*"
                          f"|{NO_HOME})")


def about_room(text: str, room: str) -> str:
    """The lesson ``text`` begins with ("mug: go to countertop 2 > ..."),
    stated about ``room`` (a room line) whatever room, if any, the text
    names after it: experience.bank.lesson_room=episode stamps the room of
    the episode a lesson was distilled from, so a lesson is filed under the
    household it was learnt in even when the extractor garbles the long room
    list. A text that does not begin as a lesson stays as it is."""
    m = _LESSON_HEAD.match(text.strip())
    if not m or not room:
        return text
    homes = _homes(m.group("homes"))
    tail = _EVIDENCE_TAIL.search(text.strip())  # the rule reader's evidence stays with it
    return (Lesson(m.group("otype"), tuple(r.strip() for r in room.split(",")), homes).text
            + (tail.group(0) if tail else ""))


def room_of(first_observation: str) -> tuple[str, ...]:
    """The room a lesson is about, from an episode's first observation."""
    return tuple(sorted(room_receptacles(first_observation)))


def room_line(first_observation: str) -> str:
    """The room as a lesson's title and the extractor's prompt state it:
    its receptacles, sorted, joined by ", "."""
    return ", ".join(room_of(first_observation))


def true_lesson(household: Household, otype: str) -> Lesson:
    """The household's homes of ``otype`` as a lesson (the oracle's entry)."""
    return Lesson(otype.lower(), household.signature, tuple(household.home_names(otype)))


def first_home(lesson: Lesson) -> Lesson:
    """``lesson`` naming its first home alone (the form one episode supports)."""
    return dataclasses.replace(lesson, homes=lesson.homes[:1])


def lesson_steps(lesson: Lesson | str, parent: str = "") -> list[str]:
    """The informed expert's plan for a lesson: look at its homes in order
    ("go to countertop 2", "go to sinkbasin 1"), except those of the goal's
    ``parent`` kind ("toilet"): a goal's object never starts where it is to
    be put. A text that is no lesson gives no steps (the expert searches)."""
    if isinstance(lesson, str):
        lesson = parse_lesson(lesson)
    homes = [h for h in lesson.homes if h.rsplit(" ", 1)[0] != parent.lower()] if lesson else []
    return [f"go to {h}" for h in homes]


# The object a goal names, in ALFWorld's task sentences ("put a hot apple in
# fridge", "find two cd and put them in safe", "look at mug under the desklamp").
_GOAL_OBJECT = (re.compile(r"^(?:put|find) (?:a |some |two )?(?:clean |hot |cool )?([a-z]+) "),
                re.compile(r"^(?:clean|heat|cool) some ([a-z]+) "),
                re.compile(r"^examine the ([a-z]+) "),
                re.compile(r"^look at ([a-z]+) "))


def _goal_match(goal: str) -> tuple[str, re.Match | None]:
    """``goal`` normalised (lower case, single spaces, a space after), and
    the match of the first _GOAL_OBJECT pattern it fits (None: no task's)."""
    text = " ".join(goal.lower().split()) + " "
    return text, next((m for p in _GOAL_OBJECT if (m := p.match(text))), None)


def goal_object(goal: str) -> str:
    """The object type a goal names ("" when the sentence is no ALFWorld task's)."""
    m = _goal_match(goal)[1]
    return m.group(1) if m else ""


# A pick-up as a trajectory text shows it: "take mug 1 from countertop 2 ->
# You pick up the mug 1 from the cou..." (the observation may be clipped).
_TAKE_STEP = re.compile(r"^take (?P<otype>[a-z]+) \d+ from (?P<home>[a-z]+ \d+) -> You pick up\b")


def read_homes(goal: str, trajectory: str, keep: int = 2) -> tuple[str, ...]:
    """Where a trajectory text (prompts.trajectory_text: "action ->
    observation | ...") shows the goal's object type picked up, first pick
    first (at most ``keep``); a take the game refused is no pick-up."""
    otype = goal_object(goal)
    found: list[str] = []
    for step in trajectory.split(" | "):
        m = _TAKE_STEP.match(" ".join(step.split()))
        if otype and m and m.group("otype") == otype and m.group("home") not in found:
            found.append(m.group("home"))
    return tuple(found[:keep])


def read_evidence(goal: str, trajectory: str) -> str | None:
    """``read_lesson``'s one-home lesson with its evidence: found at the
    first pick-up's receptacle (1/1), and not found at each other receptacle
    the trajectory looked into before it (0/1). An episode that never picked
    the goal's type up gives its looks in vain alone (a lesson of NO_HOME):
    lessons read from pick-ups alone hear only from the episodes that found
    the type, which are where the actor happened to look. None when it
    looked nowhere and picked nothing up.

    A look is an arrival whose observation shows a surface's contents
    ("You arrive at countertop 1. On ...") or an opening ("You open ...");
    arriving at a closed container and leaving is none."""
    homes = read_homes(goal, trajectory, keep=1)
    looked: list[str] = []
    for step in trajectory.split(" | "):
        action, _, seen = (" ".join(part.split()) for part in step.partition(" -> "))
        if homes and _TAKE_STEP.match(f"{action} -> {seen}") and action.endswith(f"from {homes[0]}"):
            break
        recep = _looked_into(action, seen)
        if recep and recep not in (*looked, *homes):
            looked.append(recep)
    if not (homes or looked):
        return None
    lesson = Lesson(goal_object(goal), (), homes,
                    evidence=(*((h, 1, 1) for h in homes), *((r, 0, 1) for r in looked)))
    return lesson.head + lesson.evidence_text


def read_sightings(goal: str, trajectory: str) -> str | None:
    """``read_evidence``'s lesson counted by what each look showed rather
    than by what the actor picked up, for trajectories whose clipped
    observations name the goal's objects they showed
    (experience.trajectory_sightings: "[in view: mug 1]"). The tiny actor
    often arrives where the type lies and walks on; a pick-up count then
    scores that home's look as one in vain.

    Each receptacle counts once, at its first look: found (1/1) when the
    look showed the goal's type, in vain (0/1) otherwise. A look is one
    ``read_evidence`` counts, or an arrival or opening that showed the
    type. The home is the first receptacle seen holding the type; an
    episode that saw it nowhere gives a lesson of NO_HOME. None when it
    looked nowhere."""
    otype = goal_object(goal)
    if not otype:
        return None
    named = re.compile(rf"\b{re.escape(otype)} \d+\b")
    seen_at: dict[str, int] = {}
    for step in trajectory.split(" | "):
        action, _, seen = (" ".join(part.split()) for part in step.partition(" -> "))
        shown = _reached(action, seen) if named.search(seen) else None
        recep = shown or _looked_into(action, seen)
        if recep:
            seen_at.setdefault(recep, int(shown is not None))
    if not seen_at:
        return None
    homes = tuple(r for r, found in seen_at.items() if found)[:1]
    lesson = Lesson(otype, (), homes, evidence=tuple((r, f, 1) for r, f in seen_at.items()))
    return lesson.head + lesson.evidence_text


# A clip's sighting tag, with or without its place (prompts.trajectory_text):
# "[in view: mug 1]", "[seen at drawer 2: mug 1]".
_IN_VIEW = re.compile(r"\[(?:in view|seen at [^\]:]+): ([^\]]*)\]")


def names_sightings(trajectory: str) -> bool:
    """Whether a trajectory text's clips name objects they cut off."""
    return _IN_VIEW.search(trajectory) is not None


def read_every_sighting(goal: str, trajectory: str) -> list[str]:
    """``read_sightings``'s lessons for every object type the trajectory's
    looks showed, the goal's first, for trajectories whose clips name every
    object they showed (experience.sightings_of=every): one game then
    teaches where each type it saw lies in the household, not the goal's
    alone. Each lesson's evidence counts every receptacle at its first
    look: found where that look showed the type, in vain elsewhere. The
    goal's type gets a lesson whenever something was looked into (NO_HOME
    when it was seen nowhere); another type only where it was seen, since a
    game may hold none of it. [] when it looked nowhere."""
    looks = _first_looks(trajectory)
    lessons = []
    for t in types_seen(goal, trajectory, looks):
        evidence = tuple((r, int(t in ts), 1) for r, ts in looks.items())
        lesson = Lesson(t, (), tuple(r for r, f, _ in evidence if f)[:1], evidence=evidence)
        lessons.append(lesson.head + lesson.evidence_text)
    return lessons


def _first_looks(trajectory: str) -> dict[str, set[str]]:
    """Each receptacle a trajectory looked into or reached showing objects
    -> the object types its first such look showed."""
    looks: dict[str, set[str]] = {}
    for step in trajectory.split(" | "):
        action, _, seen = (" ".join(part.split()) for part in step.partition(" -> "))
        names = objects_listed(seen) + [n for tag in _IN_VIEW.findall(seen) for n in tag.split(", ")]
        types = {n.rsplit(" ", 1)[0] for n in names}
        recep = (_reached(action, seen) if types else None) or _looked_into(action, seen)
        if recep and recep not in looks:
            looks[recep] = types
    return looks


def types_seen(goal: str, trajectory: str, looks: dict[str, set[str]] | None = None
               ) -> list[str]:
    """The object types ``read_every_sighting`` gives lessons for, in its
    order: the goal's first when anything was looked into, then each type
    the looks showed, receptacle by receptacle. [] when it looked nowhere."""
    looks = _first_looks(trajectory) if looks is None else looks
    if not looks:
        return []
    otype = goal_object(goal)
    seen = [t for ts in looks.values() for t in sorted(ts)]
    return list(dict.fromkeys(([otype] if otype else []) + seen))


def goal_about(goal: str, otype: str) -> str:
    """``goal`` (normalised) with the object type it names replaced by
    ``otype``: "put a clean mug in sinkbasin." -> "put a clean pen in
    sinkbasin.", so ``goal_object`` reads ``otype`` from it
    (experience.sightings_of=each asks about one type a call). ``goal`` as it
    is when it names no object type."""
    text, m = _goal_match(goal)
    return (text[:m.start(1)] + otype + text[m.end(1):]).rstrip() if m else goal


def _reached(action: str, seen: str) -> str | None:
    """The receptacle a step arrived at or opened, whatever it showed."""
    recep = place_of_look(seen)
    return recep if recep and action in (f"go to {recep}", f"open {recep}") else None


def _looked_into(action: str, seen: str) -> str | None:
    """The receptacle a step showed the contents of, if any."""
    recep = _reached(action, seen)
    if recep and (action.startswith("open ") or seen.startswith(f"You arrive at {recep}. On")):
        return recep
    return None


def read_lesson(goal: str, trajectory: str, keep: int = 2) -> str | None:
    """The lesson a trajectory text supports, as its type and homes without
    a room ("mug: go to countertop 2"; ``read_homes``); None when the goal's
    type was never picked up. What a perfect reader of the extractor's
    prompt would write."""
    homes = read_homes(goal, trajectory, keep)
    return Lesson(goal_object(goal), (), homes).head if homes else None


def lesson_key(otype: str, room: str) -> str:
    """What a lesson is found by (experience.bank.retrieval_key=lesson): its
    type and its room, without the homes."""
    return f"{otype} (room: {room})"


def lesson_index(text: str) -> str:
    """The key a stored entry is indexed by: a lesson's type and room; any
    other text whole."""
    lesson = parse_lesson(text)
    return lesson_key(lesson.otype, ", ".join(lesson.room)) if lesson else text


def lesson_query(goal: str, room: str) -> str:
    """The key a guided episode searches with: its goal's object and its room."""
    return lesson_key(goal_object(goal), room)


def lesson_as_read(text: str) -> str:
    """A stored text as a reader sees it: a lesson without its votes or
    evidence (the merge's bookkeeping; the actor was taught on lessons
    without them), "" for a lesson of NO_HOME (nothing to read yet); any
    other text as it is."""
    lesson = parse_lesson(text)
    if lesson and not lesson.homes:
        return ""  # looks in vain alone: nothing to read yet
    if lesson and (lesson.votes or lesson.evidence):
        return dataclasses.replace(lesson, votes=(), evidence=()).text
    return text
