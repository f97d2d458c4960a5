"""The lesson-reading diagnostic's verdicts on hand-written answers, and its
lost copy cut before the first pick-up."""
import json

import pytest

from crl_jax.training.warmstart import Demo, demo_extractor_prompt
from experiments.diagnostics.lesson_reading import cut_before_pick, verdict

FIRST = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
         "see a cabinet 1, a countertop 1, and a fridge 1.\n\nYour task is to: x")
DEMO = Demo("alfworld", 0, "put a clean apple in fridge", [
    FIRST, "You arrive at cabinet 1. On the cabinet 1, you see a mug 1.",
    "You arrive at countertop 1. On the countertop 1, you see a apple 1.",
    "You pick up the apple 1 from the countertop 1.", "You arrive at fridge 1."],
    ["go to cabinet 1", "go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1"],
    True)
ROOM = "cabinet 1, countertop 1, fridge 1"


def _add(entry):
    return json.dumps([{"op": "add", "entry": entry}])


def test_verdicts_against_what_the_prompt_shows():
    whole = demo_extractor_prompt(DEMO, room=ROOM)
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM)
    assert "take apple" not in lost and "go to countertop 1" in lost
    assert verdict(_add("apple: go to countertop 1"), whole) == "right"
    # a room written or garbled after the homes changes nothing: the bank files it
    assert verdict(_add("apple: go to countertop 1 (room: cab"), whole) == "right"
    assert verdict(_add("apple: go to cabinet 1"), whole) == "wrong homes"
    assert verdict(_add("mug: go to countertop 1"), whole) == "other"
    assert verdict(json.dumps([{"op": "return"}]), whole) == "other"
    assert verdict("not json", whole) == "other"
    assert verdict(json.dumps([{"op": "return"}]), lost) == "right"
    assert verdict(_add("apple: go to countertop 1"), lost) == "invented"


def test_verdicts_with_sightings_judge_the_first_receptacle_seen_holding_the_type():
    """Prompts whose observations name the goal's objects they showed: the
    lost copy saw an apple on the countertop, so a lesson naming it is
    right, not invented; a look that saw none is right only as no lesson."""
    seen = demo_extractor_prompt(DEMO, room=ROOM, focus="apple")
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM, focus="apple")
    assert "[in view: apple 1]" in lost
    assert verdict(_add("apple: go to countertop 1"), lost) == "right"
    assert verdict(_add("apple: go to countertop 1 (evidence: cabinet 1 0/1, countertop 1 1/1)"),
                   seen) == "right"
    assert verdict(_add("apple: go to cabinet 1"), seen) == "wrong homes"
    assert verdict(json.dumps([{"op": "return"}]), lost) == "other"
    nothing = demo_extractor_prompt(Demo("alfworld", 0, DEMO.goal, DEMO.observations[:2],
                                         DEMO.actions[:1], False), room=ROOM, focus="apple")
    assert verdict(_add("apple: no home yet (evidence: cabinet 1 0/1)"), nothing) == "right"
    assert verdict(_add("apple: go to cabinet 1"), nothing) == "invented"


def test_cut_before_pick_keeps_the_search_and_needs_one():
    cut = cut_before_pick(DEMO)
    assert cut.actions == DEMO.actions[:2] and cut.observations == DEMO.observations[:3]
    assert not cut.won
    picks_first = Demo("alfworld", 0, DEMO.goal, [FIRST, DEMO.observations[3]],
                       ["take apple 1 from countertop 1"], False)
    assert cut_before_pick(picks_first) is None
    assert cut_before_pick(Demo("alfworld", 0, DEMO.goal, DEMO.observations[:3],
                                DEMO.actions[:2], False)) is None


def test_lesson_writes_judges_a_runs_consolidation_samples():
    from experiments.diagnostics.lesson_writes import wrong_home_examples, writes_of
    whole = demo_extractor_prompt(DEMO, room=ROOM)
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM)
    samples = [{"kind": "consolidate", "prompt": whole,
                "response": _add("apple: go to countertop 1")},
               {"kind": "consolidate", "prompt": lost, "response": _add("apple: go to fridge 1")},
               {"kind": "consolidate", "prompt": lost, "response": _add("apple: go to fridge 1")},
               {"kind": "consolidate", "prompt": whole, "response": _add("apple: go to fridge 1")},
               {"kind": "ask", "prompt": "ask", "response": "x"}]
    out = writes_of({"manager": {"counters": {"episodes": 9},
                                 "training_buffer": {"samples": samples}}})
    state = {"manager": {"counters": {"episodes": 9}, "training_buffer": {"samples": samples}}}
    assert out == {"episodes": 9, "writing_replies": 4, "right": 0.25, "invented": 0.5,
                   "wrong homes": 0.25, "other": 0.0}
    # --examples: the one reply naming another home than its trajectory shows
    shown = wrong_home_examples(state, 5)
    assert len(shown) == 1 and wrong_home_examples(state, 0) == []
    assert "shows: apple: go to countertop 1" in shown[0] and "go to fridge 1" in shown[0]
    assert "take apple 1 from countertop 1" in shown[0]


@pytest.mark.parametrize("given", [False, True])
def test_lesson_writes_greedy_answers_the_same_prompts_with_warm_then_last_extractor(
        monkeypatch, tmp_path, given):
    """--greedy: the warm-started extractor answers before the checkpoint's
    parameters replace it, and both answer the run's own prompts, or the
    prompts given (--prompts_from)."""
    import dataclasses
    import types

    from experiments.diagnostics import lesson_writes, warm_start_probe
    from crl_jax.training import checkpointing, components, config_io

    whole = demo_extractor_prompt(DEMO, room=ROOM)
    samples = [{"kind": "consolidate", "prompt": whole, "response": _add("x")}] * 2
    sampling = dataclasses.make_dataclass("Sampling", [("temperature", float, 1.0)])()
    run = types.SimpleNamespace(
        extractor=types.SimpleNamespace(params="warm", model=None),
        agent=types.SimpleNamespace(sampling=sampling,
                                    sampler=types.SimpleNamespace(update_params=lambda m: None)),
        close=lambda: None)
    restores = []

    class Ckpt:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def restore(self, step, targets=None):
            restores.append((step, targets))
            return types.SimpleNamespace(step=step, trees={"extractor_params": "rl"},
                                         host_state={"manager": {"training_buffer": {
                                             "samples": samples}}})
    answer = {"warm": _add("apple: go to countertop 1"), "rl": _add("apple: go to fridge 1")}

    def answers(r, sampling):
        assert sampling.temperature == 0.0
        return lambda prompts: [answer[r.extractor.params] for _ in prompts]
    monkeypatch.setattr(checkpointing, "RunCheckpointer", Ckpt)
    monkeypatch.setattr(components, "build_run", lambda cfg, out: run)
    monkeypatch.setattr(config_io, "load_config_json", lambda cls, path: None)
    monkeypatch.setattr(warm_start_probe, "extractor_answers", answers)
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM)
    out = lesson_writes.greedy_shares(str(tmp_path), 20, [lost, lost] if given else None)
    assert restores == [(20, {"extractor_params": "warm"})]
    if given:  # the given prompts show no pick-up: the same answers are invented there
        assert out["warm"]["invented"] == 1.0 and out["last"]["invented"] == 1.0
    else:
        assert out["warm"]["right"] == 1.0 and out["last"]["wrong homes"] == 1.0
    assert out["changed"] == 1.0 and out["prompts"] == 2


def test_lesson_writes_limit_spreads_the_prompts_evenly():
    from experiments.diagnostics.lesson_writes import spread
    assert spread(list(range(10)), 4) == [0, 3, 6, 9]
    assert spread(list(range(10)), 1) == [0]
    assert spread(list(range(3)), 0) == [0, 1, 2] and spread(list(range(3)), 5) == [0, 1, 2]


def test_lesson_writes_counts_where_the_episodes_picked_the_type_up():
    """--evidence: per pool room and type, picks at the household's first
    home, its second, elsewhere; rooms outside the pool and episodes that
    picked nothing up are left out."""
    import types
    from collections import Counter

    from experiments.diagnostics.lesson_writes import evidence_line, pick_evidence
    household = types.SimpleNamespace(signature=tuple(ROOM.split(", ")),
                                      home_names=lambda otype: ["fridge 1", "countertop 1"])
    split = types.SimpleNamespace(rl_members=lambda: [household])
    at_second = demo_extractor_prompt(DEMO, room=ROOM)
    at_first = at_second.replace("countertop 1 ->", "fridge 1 ->").replace(
        "from countertop 1", "from fridge 1")
    at_other = at_second.replace("from countertop 1", "from cabinet 1")
    elsewhere = demo_extractor_prompt(DEMO, room="bed 1, desk 1")
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM)
    samples = [{"kind": "consolidate", "prompt": p, "response": ""}
               for p in (at_second, at_second, at_first, at_other, elsewhere, lost)]
    pairs = pick_evidence({"manager": {"training_buffer": {"samples": samples}}}, split)
    assert pairs == {(ROOM, "apple"): Counter(second=2, first=1, other=1)}
    assert evidence_line(pairs) == ("picks at the first home 0.25, the second 0.50, elsewhere "
                                    "0.25 (4 picks); the first home leads in 0 of 1 room/type pairs")


def test_lesson_writes_counts_episodes_that_saw_the_type_and_took_none_there():
    """--evidence on prompts that name what each look showed: an episode
    that saw the apple and never took one, one that took it where it first
    saw it, and one that took it elsewhere; a prompt without sightings is
    left out."""
    from experiments.diagnostics.lesson_writes import sighting_counts
    took_there = demo_extractor_prompt(DEMO, room=ROOM, focus="apple")
    lost = demo_extractor_prompt(cut_before_pick(DEMO), room=ROOM, focus="apple")
    elsewhere = took_there.replace("from countertop 1", "from fridge 1")
    plain = demo_extractor_prompt(DEMO, room=ROOM)
    samples = [{"kind": "consolidate", "prompt": p, "response": ""}
               for p in (took_there, lost, elsewhere, plain)]
    counts = sighting_counts({"manager": {"training_buffer": {"samples": samples}}})
    assert counts == {"saw": 3, "saw, took none": 1, "saw, took elsewhere": 1}

