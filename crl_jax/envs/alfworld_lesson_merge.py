"""Merging households' lessons: lessons about one type in one room become
one that states what the games merged showed (experience.merger=lessons,
lesson_votes or lesson_evidence)."""
from __future__ import annotations

from crl_jax.envs.alfworld_lessons import Lesson, lesson_key, parse_lesson


def merge_lessons(texts: list[str], keep: int = 2, carry_votes: bool = False,
                  evidence: bool = False, sources: bool = False) -> list:
    """A merge decision (experience.merger=lessons): lessons about the same
    type in the same room become one, whose homes are ranked by the votes of
    the lessons merged (2 for a lesson's first home, 1 for its second; ties
    to the home named first), so the merged lesson states what most games
    showed. Other texts, and lessons alone in their key, stay as they are
    (exact duplicates are dropped). Order: first appearance of each key.

    ``carry_votes`` (experience.merger=lesson_votes): the merged lesson keeps
    its homes' votes, and a lesson that has votes brings them to the next
    merge instead of 2 and 1, so a lesson states the evidence of every
    episode merged into it, not of the last few.

    ``evidence`` (experience.merger=lesson_evidence): the merged lesson sums
    its lessons' evidence (a lesson without any brings its first home found
    once in one look) and names the homes ``rank_by_evidence`` ranks.

    ``sources``: each output is (text, indices of the inputs it states),
    for experience.bank.merge_credit=sources."""
    groups: dict[str, list[tuple[int, Lesson]]] = {}
    out: list[tuple[str, str]] = []  # ("text", norm) or ("lesson", key), first appearance
    plain: dict[str, list[int]] = {}  # a text that is no lesson, by its form: its inputs
    for index, text in enumerate(texts):
        lesson = parse_lesson(text)
        if lesson is None:
            norm = " ".join(text.lower().split())
            if norm not in plain:
                plain[norm] = []
                out.append(("text", norm))
            plain[norm].append(index)
            continue
        key = lesson_key(lesson.otype, ", ".join(lesson.room))
        if key not in groups:
            groups[key] = []
            out.append(("lesson", key))
        groups[key].append((index, lesson))
    result = []
    for kind, key in out:
        if kind == "text":
            indices = tuple(plain[key])
            text = texts[indices[0]]
        else:
            indices = tuple(i for i, _ in groups[key])
            group = [lesson for _, lesson in groups[key]]
            text = (group[0].text if len(group) == 1 else
                    (_merged_evidence(group, keep) if evidence else _merged(group, keep, carry_votes)).text)
        result.append((text, indices) if sources else text)
    return result


def _merged_evidence(group: list[Lesson], keep: int) -> Lesson:
    totals: dict[str, tuple[int, int]] = {}
    for lesson in group:
        for recep, found, looked in lesson.evidence or ((lesson.homes[0], 1, 1),):
            f, n = totals.get(recep, (0, 0))
            totals[recep] = (f + found, n + looked)
    return Lesson(group[0].otype, group[0].room, tuple(rank_by_evidence(totals, keep)),
                  evidence=tuple((r, f, n) for r, (f, n) in totals.items()))


def _merged(group: list[Lesson], keep: int, carry_votes: bool) -> Lesson:
    votes: dict[str, int] = {}
    for lesson in group:
        weights = lesson.votes if carry_votes and lesson.votes else (2, 1)
        for home, weight in zip(lesson.homes, weights):
            votes[home] = votes.get(home, 0) + weight
    order = {h: i for i, h in enumerate(dict.fromkeys(h for g in group for h in g.homes))}
    homes = sorted(votes, key=lambda h: (-votes[h], order[h]))[:keep]
    return Lesson(group[0].otype, group[0].room, tuple(homes),
                  tuple(votes[h] for h in homes) if carry_votes else ())


def rank_by_evidence(evidence: dict[str, tuple[int, int]], keep: int) -> list[str]:
    """The receptacles the type was found at, by the share of looks that
    found it (with one found and one missed look added to each, so one lucky
    look does not outrank many), at most ``keep``; ties to the order given."""
    order = {r: i for i, r in enumerate(evidence)}
    rate = {r: (f + 1) / (n + 2) for r, (f, n) in evidence.items()}
    found = [r for r, (f, _) in evidence.items() if f > 0]
    return sorted(found, key=lambda r: (-rate[r], order[r]))[:keep]
