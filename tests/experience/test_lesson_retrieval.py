"""Lessons in the bank (households): found by their type and room with a
floor that says "nothing fits" for a room the bank has never seen, merged
by their homes' votes, and written from trajectories; checked against
hand-made entries and cosines computed here with NumPy."""
import dataclasses
import json

import numpy as np
import pytest

from crl_jax.envs.alfworld_households import households
from crl_jax.envs.alfworld_lesson_merge import merge_lessons
from crl_jax.envs.alfworld_lessons import (Lesson, about_room, goal_object, lesson_index,
                                           lesson_query, parse_lesson, read_lesson, true_lesson)
from crl_jax.experience import (AddEntry, EpisodeRecord, ExperienceBank, ExperienceConfig,
                                ExperienceManager, ExtractorReply, HashingEmbedder)
from crl_jax.experience.operations import index_text, query_text, shown_text
from crl_jax.rl import prompts
from crl_jax.training.components import experience_merger
from crl_jax.training.lesson_demos import trajectory_lesson
from crl_jax.training.warmstart import Demo
from experiments.configs import load_preset

ROOM = ("cabinet 1", "countertop 1", "fridge 1", "sinkbasin 1")


@pytest.mark.parametrize("goal, obj", [
    ("put a hot apple in fridge", "apple"), ("put some spraybottle on toilet", "spraybottle"),
    ("clean some mug and put it in coffeemachine", "mug"), ("put a clean mug in cabinet", "mug"),
    ("find two cd and put them in safe", "cd"), ("put two pillow in sofa", "pillow"),
    ("examine the book with the desklamp", "book"), ("look at bowl under the desklamp", "bowl"),
    ("cool some potato and put it in countertop", "potato"), ("go west", "")])
def test_goal_object_reads_every_task_template(goal, obj):
    assert goal_object(goal) == obj


def test_a_lesson_is_indexed_by_type_and_room_and_queried_by_goal_and_room():
    lesson = Lesson("apple", ROOM, ("countertop 1", "fridge 1"))
    key = "apple (room: cabinet 1, countertop 1, fridge 1, sinkbasin 1)"
    assert lesson_index(lesson.text) == index_text(lesson.text, "lesson") == key
    assert lesson_query("heat some apple and put it in fridge", ", ".join(ROOM)) == key
    first = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
             "see a sinkbasin 1, a cabinet 1, a fridge 1, and a countertop 1.\n\nYour task is to: x")
    assert prompts.retrieval_query("put a apple in fridge", first, "lesson") == key
    assert query_text("put a apple in fridge", "lesson", room=", ".join(ROOM)) == key
    assert index_text("not a lesson", "lesson") == "not a lesson"


def _bank(floor: float, emb, extractor=None, lesson_room: str = "written"):
    config = ExperienceConfig(workers=1, top_k=1, retrieval_key="lesson", min_similarity=floor,
                              diversity_lambda=0.0, lesson_room=lesson_room)
    bank = ExperienceBank(config, emb.dim)
    return bank, ExperienceManager(bank, emb, extractor=extractor, clock=lambda: 0.0,
                                   synchronous=True)


def test_the_actor_reads_a_stored_lesson_without_its_votes():
    """A merged lesson with votes is found by its type and room; the line a
    guided episode reads (step.retrieve) is the lesson without the votes."""
    from types import SimpleNamespace

    from crl_jax.training.step import retrieve
    emb = HashingEmbedder(256)
    voted = Lesson("apple", ROOM, ("countertop 1", "fridge 1"), (5, 3))
    bank, manager = _bank(0.99, emb)
    with bank, manager:
        bank.apply([AddEntry("", voted.text, emb.embed([index_text(voted.text, "lesson")])[0])])
        bank.flush()
        run = SimpleNamespace(manager=manager, cfg=SimpleNamespace(experience=SimpleNamespace(
            bank=SimpleNamespace(per_task=False, thread_timeout_s=10.0))))
        (text, _), = retrieve(run, [lesson_query("put a apple in sinkbasin", ", ".join(ROOM))],
                              [""], record=False)
    assert text == Lesson("apple", ROOM, ("countertop 1", "fridge 1")).text
    # asked mid-episode, an unusable rewrite hands over the entry as readers see it
    bank, manager = _bank(0.99, emb, extractor=lambda request: ExtractorReply("p", ""))
    with bank, manager:
        bank.apply([AddEntry("", voted.text, emb.embed([index_text(voted.text, "lesson")])[0])])
        bank.flush()
        asked = manager.search_and_ask(lesson_query("put a apple in sinkbasin", ", ".join(ROOM)))
        assert asked.result(timeout=10).text == text


def test_the_floor_finds_the_own_lesson_and_nothing_for_an_unseen_household():
    """Lessons of 4 households; the floor sits above every cosine between two
    different keys (computed here): each pool game finds its own lesson, a
    game of a fifth household nothing, and without the floor the nearest key."""
    emb = HashingEmbedder(256)
    seen, unseen = households(5)[:4], households(5)[4]
    lessons = [true_lesson(h, t) for h in seen for t in h.goal_types]
    keys = [lesson_index(x.text) for x in lessons]
    vecs = emb.embed(keys)
    cross = vecs @ vecs.T - 2 * np.eye(len(keys))
    otype = unseen.goal_types[0]
    query = lesson_query(f"put a {otype.lower()} in cabinet", ", ".join(unseen.signature))
    to_unseen = vecs @ emb.embed([query])[0]
    assert max(cross.max(), to_unseen.max()) < 0.99
    for floor, expect_unseen in ((0.99, None), (-1.0, int(to_unseen.argmax()))):
        bank, manager = _bank(floor, emb)
        with bank, manager:
            bank.apply([AddEntry("t", x.text, v) for x, v in zip(lessons, vecs)])
            bank.flush()
            for lesson, h in zip(lessons, [h for h in seen for _ in h.goal_types]):
                q = lesson_query(f"put a {lesson.otype} in cabinet", ", ".join(h.signature))
                assert [r.entry.text for r in manager.retrieve(q, "t")] == [lesson.text]
            got = manager.retrieve(query, "t")
            if expect_unseen is None:
                assert got == []
            else:
                assert [r.entry.text for r in got] == [lessons[expect_unseen].text]


def test_merge_combines_one_type_and_room_by_votes():
    """Three apple lessons of one room vote countertop 1: 2 + 1 + 2 = 5,
    fridge 1: 1 + 2 = 3, sinkbasin 1: 1; a mug lesson of the room and an
    apple lesson of another room stay; non-lessons are de-duplicated."""
    other_room = ("drawer 1", "shelf 1")
    texts = [Lesson("apple", ROOM, ("countertop 1", "fridge 1")).text,
             "go to fridge 1 > take apple 1",
             Lesson("apple", ROOM, ("fridge 1", "countertop 1")).text,
             Lesson("mug", ROOM, ("cabinet 1",)).text,
             Lesson("apple", other_room, ("shelf 1",)).text,
             "Go to fridge 1 >  take apple 1",
             Lesson("apple", ROOM, ("countertop 1", "sinkbasin 1")).text]
    assert merge_lessons(texts) == [Lesson("apple", ROOM, ("countertop 1", "fridge 1")).text,
                                    "go to fridge 1 > take apple 1",
                                    Lesson("mug", ROOM, ("cabinet 1",)).text,
                                    Lesson("apple", other_room, ("shelf 1",)).text]
    # a tie goes to the home named first; a single lesson stays as written
    tie = [Lesson("egg", ROOM, ("fridge 1",)).text, Lesson("egg", ROOM, ("cabinet 1",)).text]
    assert merge_lessons(tie) == [Lesson("egg", ROOM, ("fridge 1", "cabinet 1")).text]
    assert merge_lessons(texts[3:4]) == texts[3:4]
    # experience.lesson_homes=1: the merged lesson keeps its most-voted home alone
    assert merge_lessons(texts, keep=1)[0] == Lesson("apple", ROOM, ("countertop 1",)).text
    assert merge_lessons(tie, keep=1) == [Lesson("egg", ROOM, ("fridge 1",)).text]
    # ... and the run's merger takes it from the config
    spec = dataclasses.replace(load_preset("alfworld_households_cpu").experience, lesson_homes=1)
    assert experience_merger(spec, None)(texts)[0] == Lesson("apple", ROOM, ("countertop 1",)).text
    votes = dataclasses.replace(spec, merger="lesson_votes")
    assert experience_merger(votes, None)(tie) == [Lesson("egg", ROOM, ("fridge 1",), (2,)).text]


def test_a_merge_that_carries_votes_states_every_merged_episodes_evidence():
    """Merged once, three apple lessons keep their votes (countertop 1: 5,
    fridge 1: 3); merged again with two fresh lessons naming fridge 1 first
    (2 + 2 more for it, 1 + 1 more for countertop 1) the older evidence
    still leads, 7 against 7 going to the home named first; the plain
    merge would rank fridge 1 first on those two lessons' votes alone."""
    first = [Lesson("apple", ROOM, homes).text for homes in
             (("countertop 1", "fridge 1"), ("fridge 1", "countertop 1"),
              ("countertop 1", "sinkbasin 1"))]
    once = merge_lessons(first, carry_votes=True)
    assert once == [Lesson("apple", ROOM, ("countertop 1", "fridge 1"), (5, 3)).text]
    assert once[0].endswith("(room: cabinet 1, countertop 1, fridge 1, sinkbasin 1) (votes: 5, 3)")
    fresh = [Lesson("apple", ROOM, ("fridge 1", "countertop 1")).text] * 2
    assert merge_lessons(once + fresh, carry_votes=True) == [
        Lesson("apple", ROOM, ("countertop 1", "fridge 1"), (7, 7)).text]
    plain = merge_lessons([Lesson("apple", ROOM, ("countertop 1", "fridge 1")).text] + fresh)
    assert plain == [Lesson("apple", ROOM, ("fridge 1", "countertop 1")).text]
    # the votes round-trip, are the merge's own (readers see the lesson without
    # them), and a text whose votes do not match its homes is no lesson
    assert parse_lesson(once[0]).votes == (5, 3)
    assert shown_text(once[0]) == Lesson("apple", ROOM, ("countertop 1", "fridge 1")).text
    assert shown_text("go to fridge 1 (votes: 2)") == "go to fridge 1 (votes: 2)"
    assert parse_lesson(once[0].replace("(votes: 5, 3)", "(votes: 5)")) is None
    assert index_text(once[0], "lesson") == index_text(shown_text(once[0]), "lesson")


def _demo(actions, observations, won=True, goal="put a clean apple in fridge"):
    first = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
             "see a cabinet 1, a countertop 1, a fridge 1, and a sinkbasin 1.\n\nYour task is to: x")
    return Demo("alfworld", 0, goal, [first, *observations], actions, won)


def test_a_trajectory_supports_the_lesson_of_where_its_goal_was_found():
    demo = _demo(["go to cabinet 1", "go to countertop 1", "take apple 1 from countertop 1"],
                 ["You arrive at cabinet 1. On the cabinet 1, you see a mug 1.",
                  "You arrive at countertop 1. On the countertop 1, you see a apple 1.",
                  "You pick up the apple 1 from the countertop 1."], won=False)
    assert trajectory_lesson(demo) == Lesson("apple", ROOM, ("countertop 1",)).text
    # a pick of another object is no evidence; a game that never found it gives none
    other = _demo(["take mug 1 from cabinet 1"], ["You pick up the mug 1 from the cabinet 1."])
    assert trajectory_lesson(other) is None


def test_read_lesson_finds_in_the_clipped_text_what_the_whole_trajectory_shows():
    """The rule reader sees the extractor's text (observations cut to 40
    characters, so the pick-up's receptacle is read from the action) and
    agrees with trajectory_lesson, which reads the whole observations."""
    demo = _demo(["go to cabinet 1", "take apple 1 from cabinet 1", "go to countertop 1",
                  "take apple 2 from countertop 1", "take apple 1 from fridge 1"],
                 ["You arrive at cabinet 1. On the cabinet 1, you see a mug 1.",
                  "Nothing happens.",  # a take the game refused is no pick-up
                  "You arrive at countertop 1. On the countertop 1, you see a apple 2.",
                  "You pick up the apple 2 from the countertop 1.",
                  "You pick up the apple 1 from the fridge 1."], won=False)
    text = prompts.trajectory_text(demo.actions, demo.observations[1:], obs_chars=40)
    assert "countertop 1." not in text.split("take apple 2")[1].split("|")[0]  # clipped
    assert read_lesson(demo.goal, text) == "apple: go to countertop 1 > go to fridge 1"
    assert read_lesson(demo.goal, text) + f" (room: {', '.join(ROOM)})" == trajectory_lesson(demo)
    assert read_lesson(demo.goal, text, keep=1) == "apple: go to countertop 1"
    # another type's pick, no pick, a goal naming no object: no lesson
    assert read_lesson("put a mug in fridge", text) is None
    assert read_lesson(demo.goal, "go to cabinet 1 -> You arrive at cabinet 1.") is None
    assert read_lesson("go west", text) is None


def test_about_room_files_the_lessons_homes_under_the_given_room():
    room = ", ".join(ROOM)
    garbled = "apple: go to countertop 1 > go to fridge 1 (room: cabinet 1, go to fridge 1 (room: cab"
    assert about_room(garbled, room) == (
        "apple: go to countertop 1 > go to fridge 1 "
        "(room: cabinet 1, countertop 1, fridge 1, sinkbasin 1)")
    assert about_room("mug: go to cabinet 1", room) == Lesson("mug", ROOM, ("cabinet 1",)).text
    # no lesson at its head (a plan, a broken type or home): as written; no room: as written
    for text in ("go to fridge 1 > take apple 1", "e, cabinet 3 (room: x",
                 "mug: go to cabinetom: go to cabinet 1 (room: cabinet 1)"):
        assert about_room(text, room) == text
    assert about_room("mug: go to cabinet 1 (room: x)", "") == "mug: go to cabinet 1 (room: x)"


@pytest.mark.parametrize("lesson_room", ["written", "episode"])
def test_consolidation_files_a_lesson_under_the_episodes_room_when_asked(lesson_room):
    """The extractor garbles the room; with lesson_room=episode the stored
    lesson names the episode's room and the episode's next query finds it,
    as written nothing finds it. An update is stamped likewise."""
    garbled = "apple: go to fridge 1 (room: cabinet 1, fridge 1 (room: sink"
    answers = [[{"op": "add", "entry": garbled}],
               [{"op": "update", "indices": [0], "entry": "apple: go to countertop 1 (room: x 1)"}]]
    seen = []

    def extractor(request):
        seen.append(request)
        return ExtractorReply(f"prompt {len(seen)}", json.dumps(answers[len(seen) - 1]))
    emb = HashingEmbedder(256)
    bank, manager = _bank(0.99, emb, extractor, lesson_room)
    room, goal = ", ".join(ROOM), "put a hot apple in fridge"
    with bank, manager:
        manager.submit_episode(EpisodeRecord(goal, "traj", True, "t", room=room)).result(5)
        bank.flush()
        texts = [e.text for e in bank.snapshot.entries.values()]
        found = manager.retrieve(lesson_query(goal, room), "t")
        if lesson_room == "written":
            assert texts == [garbled] and found == []
            return
        assert texts == [Lesson("apple", ROOM, ("fridge 1",)).text]
        assert [r.entry.text for r in found] == texts
        manager.submit_episode(EpisodeRecord(goal, "traj", False, "t", guiding_entry_id=found[0].entry.id,
                                             room=room)).result(5)
        bank.flush()
        assert [e.text for e in bank.snapshot.entries.values()] == [
            Lesson("apple", ROOM, ("countertop 1",)).text]


def test_lesson_room_is_checked():
    with pytest.raises(ValueError, match="lesson_room must be one of"):
        ExperienceConfig(lesson_room="guessed")
