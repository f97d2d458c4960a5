"""experience.merger=lesson_evidence: lessons that state where the type was
found and where it was looked for in vain, merged by the share of looks
that found it (hand-computed cases)."""
import dataclasses
import json

from crl_jax.envs.alfworld_lesson_merge import merge_lessons, rank_by_evidence
from crl_jax.envs.alfworld_lessons import (NO_HOME, Lesson, about_room, parse_lesson,
                                           read_evidence, read_lesson)
from crl_jax.experience.consolidation import ExtractionRequest, ExtractorReply
from crl_jax.experience.operations import index_text, shown_text
from crl_jax.training.components import experience_merger
from crl_jax.training.lesson_controls import RuleLessonReader
from experiments.configs import load_preset

ROOM = ("cabinet 1", "countertop 1", "handtowelholder 1", "sinkbasin 1")
GOAL = "put some handtowel on countertop"
# looks at the holder (in vain) and the sink basin, twice at the holder,
# finds the towel in cabinet 1, then walks on to the goal's place
SEARCHED = ("go to handtowelholder 1 -> You arrive at handtowelholder 1. On th... | "
            "go to sinkbasin 1 -> You arrive at sinkbasin 1. On the si... | "
            "go to handtowelholder 1 -> You arrive at handtowelholder 1. On th... | "
            "go to cabinet 1 -> You arrive at cabinet 1. The cabinet ... | "
            "open cabinet 1 -> You open the cabinet 1. The cabinet 1... | "
            "take handtowel 1 from cabinet 1 -> You pick up the handtowel 1 from the ... | "
            "go to countertop 1 -> You arrive at countertop 1. On the co...")


def test_an_episode_states_where_it_found_the_type_and_where_it_looked_in_vain():
    assert read_evidence(GOAL, SEARCHED) == (
        "handtowel: go to cabinet 1 (evidence: cabinet 1 1/1, handtowelholder 1 0/1, "
        "sinkbasin 1 0/1)")  # each receptacle once; the goal's place after the pick-up is no look
    found_first = "take handtowel 1 from handtowelholder 1 -> You pick up the handtowel 1"
    assert read_evidence(GOAL, found_first) == (
        "handtowel: go to handtowelholder 1 (evidence: handtowelholder 1 1/1)")
    # an episode that picked nothing up states its looks in vain alone; the
    # closed cabinet it went to and left is no look, the one it opened is
    never = SEARCHED.split(" | take")[0]
    assert read_lesson(GOAL, never) is None
    assert read_evidence(GOAL, never) == (
        f"handtowel: {NO_HOME} (evidence: handtowelholder 1 0/1, sinkbasin 1 0/1, cabinet 1 0/1)")
    closed = "go to cabinet 1 -> You arrive at cabinet 1. The cabinet ... | go to drawer 1 -> Nothing"
    assert read_evidence(GOAL, closed) is None
    # the lesson is the rule reader's, with its evidence after it
    assert read_evidence(GOAL, SEARCHED).startswith(read_lesson(GOAL, SEARCHED, keep=1))


def _lesson(home, *missed):
    return Lesson("handtowel", ROOM, (home,),
                  evidence=((home, 1, 1), *((m, 0, 1) for m in missed))).text


def test_looks_in_vain_outrank_a_habitual_first_look():
    """Three episodes look at the holder first and find a towel there; two
    look there in vain and find one in cabinet 1. Found counts alone
    (votes: 6 against 4) name the holder; the evidence names cabinet 1:
    holder 3 of 5 looks, (3+1)/(5+2) = 0.57; cabinet 2 of 2, 3/4 = 0.75."""
    texts = [_lesson("handtowelholder 1")] * 3 + [_lesson("cabinet 1", "handtowelholder 1")] * 2
    merged = merge_lessons(texts, keep=2, evidence=True)
    assert merged == [Lesson("handtowel", ROOM, ("cabinet 1", "handtowelholder 1"), evidence=(
        ("handtowelholder 1", 3, 5), ("cabinet 1", 2, 2))).text]
    heads = [shown_text(t) for t in texts]
    assert parse_lesson(merge_lessons(heads, keep=1)[0]).homes == ("handtowelholder 1",)
    # merged again with a fresh lesson the sums go on: the holder 4 of 6 looks
    # (0.625), still below cabinet 1; a lesson without evidence counts as one
    # look that found its first home
    again = merge_lessons(merged + [Lesson("handtowel", ROOM, ("handtowelholder 1",)).text],
                          keep=1, evidence=True)
    assert parse_lesson(again[0]).homes == ("cabinet 1",)
    assert parse_lesson(again[0]).evidence == (("handtowelholder 1", 4, 6), ("cabinet 1", 2, 2))


def test_looks_in_vain_of_lost_episodes_join_the_merge_and_are_never_read():
    """Two episodes found a towel at the holder; three more looked there,
    found nothing anywhere and were lost. Alone they are a lesson of no
    home, which a reader sees as nothing; merged, the holder has 2 finds in
    5 looks (3/7 = 0.43) and cabinet 1 its one find in one look (2/3)."""
    lost = Lesson("handtowel", ROOM, (), evidence=(("handtowelholder 1", 0, 1),)).text
    assert lost.startswith(f"handtowel: {NO_HOME} (room: ")
    assert parse_lesson(lost).homes == () and shown_text(lost) == ""
    alone = merge_lessons([lost] * 3, keep=1, evidence=True)
    assert alone == [Lesson("handtowel", ROOM, (), evidence=(("handtowelholder 1", 0, 3),)).text]
    merged = merge_lessons([_lesson("handtowelholder 1")] * 2 + alone + [_lesson("cabinet 1")],
                           keep=1, evidence=True)
    assert parse_lesson(merged[0]).homes == ("cabinet 1",)
    assert parse_lesson(merged[0]).evidence == (("handtowelholder 1", 2, 5), ("cabinet 1", 1, 1))
    # the host files it under the episode's room like any lesson
    assert parse_lesson(about_room(f"handtowel: {NO_HOME} (evidence: handtowelholder 1 0/1)",
                                   ", ".join(ROOM))) == parse_lesson(lost)


def test_a_guided_episode_reads_nothing_from_a_lesson_of_looks_alone():
    from concurrent.futures import Future
    from types import SimpleNamespace

    from crl_jax.training.step import retrieve
    texts = [Lesson("handtowel", ROOM, (), evidence=(("sinkbasin 1", 0, 2),)).text,
             _lesson("cabinet 1", "sinkbasin 1"), None]

    class Manager:
        def search_many(self, queries, keys, record):
            out = []
            for i, text in enumerate(texts):
                f = Future()
                f.set_result([SimpleNamespace(entry=SimpleNamespace(text=text, id=i))]
                             if text else [])
                out.append(f)
            return out
    bank = SimpleNamespace(per_task=False, thread_timeout_s=1.0)
    run = SimpleNamespace(cfg=SimpleNamespace(experience=SimpleNamespace(bank=bank)),
                          manager=Manager())
    assert retrieve(run, ["q"] * 3, ["alfworld"] * 3) == [
        None, (Lesson("handtowel", ROOM, ("cabinet 1",)).text, 1), None]


def test_ranking_needs_a_find_and_breaks_ties_in_order():
    assert rank_by_evidence({"a 1": (0, 4), "b 1": (1, 1), "c 1": (1, 1)}, keep=2) == ["b 1", "c 1"]
    assert rank_by_evidence({"a 1": (0, 4)}, keep=1) == []
    # a lesson alone in its key, and other texts, stay as they are
    assert merge_lessons([_lesson("cabinet 1", "sinkbasin 1"), "a plan"], evidence=True) == [
        _lesson("cabinet 1", "sinkbasin 1"), "a plan"]


def test_evidence_round_trips_and_is_the_merges_own():
    text = _lesson("cabinet 1", "sinkbasin 1")
    assert text.endswith("(evidence: cabinet 1 1/1, sinkbasin 1 0/1)")
    lesson = parse_lesson(text)
    assert lesson.evidence == (("cabinet 1", 1, 1), ("sinkbasin 1", 0, 1))
    assert shown_text(text) == Lesson("handtowel", ROOM, ("cabinet 1",)).text  # readers: no tail
    assert index_text(text, "lesson") == index_text(shown_text(text), "lesson")
    assert parse_lesson(text.replace("1/1,", "1 of 1,")) is None
    # the host stamps the episode's room and keeps the rule reader's evidence
    written = read_evidence(GOAL, SEARCHED)
    stamped = about_room(written, ", ".join(ROOM))
    assert parse_lesson(stamped) == dataclasses.replace(
        parse_lesson(f"handtowel: go to cabinet 1 (room: {', '.join(ROOM)})"),
        evidence=(("cabinet 1", 1, 1), ("handtowelholder 1", 0, 1), ("sinkbasin 1", 0, 1)))


def test_the_run_merges_by_evidence_and_its_rule_reader_writes_it():
    spec = dataclasses.replace(load_preset("alfworld_households_cpu").experience,
                               merger="lesson_evidence", lesson_homes=1)
    texts = [_lesson("handtowelholder 1")] * 3 + [_lesson("cabinet 1", "handtowelholder 1")] * 2
    assert parse_lesson(experience_merger(spec, None)(texts)[0]).homes == ("cabinet 1",)

    def extractor(request):
        return ExtractorReply("p", "asked")
    request = ExtractionRequest("consolidate", (), GOAL, SEARCHED, True, room=", ".join(ROOM))
    with_evidence = json.loads(RuleLessonReader(extractor, evidence=True)(request).response)
    assert with_evidence == [{"op": "add", "entry": read_evidence(GOAL, SEARCHED)}]
    plain = json.loads(RuleLessonReader(extractor)(request).response)
    assert plain == [{"op": "add", "entry": "handtowel: go to cabinet 1"}]
