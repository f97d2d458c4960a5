"""Households' controls and measures: ``controls.lesson_room=other``
(Comp. RL reading another household's lessons), ``controls.lesson_reader=
rule`` (lessons read from trajectories by rule: the extractor's oracle) and
the bank's lesson accuracy against the households' true homes.

A control for the households study, not a method: each guided episode's
lesson query ("apple (room: ...)") names instead the room of another
household of the RL pool, one whose goals also name the type where there is
one, so the bank answers with the lesson learnt for the same type in
another room (or nothing). If lessons help by transferring what a room
teaches, reading another room's must not help.
"""
from __future__ import annotations

import re

from crl_jax.envs.alfworld_lessons import (lesson_key, read_evidence, read_every_sighting,
                                           read_lesson, read_sightings)
from crl_jax.experience.consolidation import ExtractionRequest, ExtractorReply
from crl_jax.rl import prompts
from crl_jax.rl.extractor import request_view
from crl_jax.training.lesson_demos import prompt_lines
from crl_jax.training.warmstart import extractor_response

# lesson_key's form, read back: "apple (room: cabinet 1, ...)"
_QUERY = re.compile(r"^(?P<otype>[a-z]*) \(room: (?P<room>.*)\)$")


class ForeignRooms:
    """Rewrites lesson queries to name another pool household's room."""

    def __init__(self, split):
        self.pool = list(split.rl_members())

    def query(self, text: str) -> str:
        m = _QUERY.match(text)
        if not m or len(self.pool) < 2:
            return text
        otype, room = m.group("otype"), m.group("room")
        rooms = [", ".join(h.signature) for h in self.pool]
        start = rooms.index(room) + 1 if room in rooms else 0
        order = [self.pool[(start + i) % len(self.pool)] for i in range(len(self.pool))]
        others = [h for h in order if ", ".join(h.signature) != room]
        same_type = [h for h in others if otype in {t.lower() for t in h.goal_types}]
        chosen = (same_type or others)[0]
        return lesson_key(otype, ", ".join(chosen.signature))


def lesson_accuracy(entries, split) -> dict[str, float]:
    """How right the bank's lessons are about the RL pool's households: of
    the entries that are lessons about a pool room and one of its goal
    types, the share whose first home is the household's first home
    (lessons/first_home), or one of its homes (lessons/any_home); their
    number (lessons/count) and the share of the pool's (room, type) pairs
    with a lesson (lessons/coverage); the two shares only when there is one."""
    from crl_jax.envs.alfworld_lessons import parse_lesson
    rooms = {h.signature: h for h in split.rl_members()}
    first, anywhere, count, covered = 0, 0, 0, set()
    for entry in entries:
        lesson = parse_lesson(entry.text)
        household = rooms.get(lesson.room) if lesson and lesson.homes else None
        if household is None or lesson.otype not in {t.lower() for t in household.goal_types}:
            continue
        homes = household.home_names(lesson.otype)
        count += 1
        first += lesson.homes[0] == homes[0]
        anywhere += lesson.homes[0] in homes
        covered.add((household.index, lesson.otype))
    pairs = sum(len(h.goal_types) for h in rooms.values())
    out = {"lessons/count": float(count), "lessons/coverage": len(covered) / pairs}
    if count:
        out.update({"lessons/first_home": first / count, "lessons/any_home": anywhere / count})
    return out


class RuleLessonReader:
    """A control for the households study, not a method: consolidation's
    reply is the lesson a perfect reader finds in the prompt's trajectory
    (alfworld_lessons.read_lesson on the same clipped text the extractor
    reads), or no lesson; the extractor answers everything else. What the
    bank would learn if the extractor never misread, from the same evidence:
    the gap to the learned bank is the extractor's, the gap to the oracle
    lesson the evidence's. With ``evidence`` (experience.merger=
    lesson_evidence) its lesson also states where the episode looked in
    vain before the pick-up (alfworld_lessons.read_evidence); with
    ``sightings`` too (experience.trajectory_sightings), where each look
    showed the type or did not (alfworld_lessons.read_sightings). With
    ``every_type`` (experience.sightings_of=every), a lesson for each type
    the trajectory saw, the goal's first, at most ``max_lessons``
    (alfworld_lessons.read_every_sighting)."""

    def __init__(self, extractor, evidence: bool = False, sightings: bool = False,
                 every_type: bool = False, max_lessons: int = 3):
        self.extractor = extractor
        self.read = (read_sightings if evidence and sightings else
                     read_evidence if evidence else read_lesson)
        self.every_type = every_type and evidence and sightings
        self.max_lessons = max_lessons

    def __call__(self, request: ExtractionRequest) -> ExtractorReply:
        if request.kind != "consolidate":
            return self.extractor(request)
        prompt = prompts.render_extractor_compact(request_view(request))
        # read from the prompt itself, so the rule sees the trajectory as clipped there
        goal, trajectory = prompt_lines(prompt, "goal", "traj")
        read = (read_every_sighting(goal, trajectory)[:self.max_lessons] if self.every_type
                else self.read(goal, trajectory))
        return ExtractorReply(prompt, extractor_response(read))
