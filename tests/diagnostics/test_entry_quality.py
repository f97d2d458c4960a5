"""Extractor entry scoring against hand-computed values."""
import json

import pytest

from crl_jax.diagnostics.entry_quality import EntryScores, entry_quality, plan_parts, step_f1
from crl_jax.training.warmstart import Demo


def _add(entry):
    return json.dumps([{"op": "add", "entry": entry}])


def test_plan_parts_and_step_f1_by_hand():
    assert plan_parts("put a mug in desk: take mug 1 from shelf 1 > move mug 1 to desk 1") == \
        ("put a mug in desk", ["take mug 1 from shelf 1", "move mug 1 to desk 1"])
    assert step_f1(["a", "b"], ["a", "b"]) == 1.0
    assert step_f1(["a", "x", "y"], ["a", "b"]) == pytest.approx(2 * 1 / 5)
    assert step_f1([], ["a"]) == 0.0


def test_scores_by_hand():
    want = "put a mug in desk: take mug 1 from shelf 1 > move mug 1 to desk 1"
    s = EntryScores()
    s.add(_add(want), want)  # exact
    s.add(_add("put a mug in desk: take mug 2 from shelf 1 > move mug 1 to desk 1"), want)
    s.add(_add("heat an egg: take mug 1 from shelf 1"), want)  # wrong goal, one step of two
    s.add("no json here", want)  # unparsable: counts as a miss
    d = s.as_dict()
    assert d["games"] == 4 and d["parsed"] == 0.75 and d["exact"] == 0.25 and d["goal"] == 0.5
    assert d["step_f1"] == pytest.approx((1.0 + 0.5 + 2 / 3) / 4)
    assert d["malformed"] == 0.25 and d["rejected"] == {"no_json": 1}


def test_entry_quality_scores_only_won_demos_against_their_plans():
    won = Demo("alfworld", "t1", "put a mug in desk", ["obs0", "o1", "o2", "o3"],
               ["go to shelf 1", "take mug 1 from shelf 1", "move mug 1 to desk 1"], True)
    lost = Demo("alfworld", "t2", "heat an egg", ["obs0", "o1"], ["go to fridge 1"], False)
    seen = []

    def answer(texts):
        seen.extend(texts)
        # the plan keeps the walk to where the mug was taken (warmstart.walks_kept)
        return [_add("put a mug in desk: go to shelf 1 > take mug 1 from shelf 1 > "
                     "move mug 1 to desk 1")]

    d = entry_quality([won, lost], answer).as_dict()
    assert len(seen) == 1 and "put a mug in desk" in seen[0]
    assert d == {"games": 1, "parsed": 1.0, "exact": 1.0, "goal": 1.0, "step_f1": 1.0,
                 "malformed": 0.0, "rejected": {}}


def test_missteps_show_rejected_actions_and_are_scored_against_the_clean_plan():
    """With missteps the prompt's trajectory holds rejected actions; the same
    answer (the clean plan) still scores 1, and an extractor that copied every
    action it read, rejected ones included, would score less."""
    won = Demo("alfworld", "t1", "put a mug in desk", ["obs0", "o1", "o2", "o3"],
               ["go to shelf 1", "take mug 1 from shelf 1", "move mug 1 to desk 1"], True)
    plan = "put a mug in desk: go to shelf 1 > take mug 1 from shelf 1 > move mug 1 to desk 1"
    seen = []

    def answer(texts):
        seen.extend(texts)
        return [_add(plan)]

    d = entry_quality([won], answer, missteps=2, seed=3).as_dict()
    assert seen[0].count("Nothing happens.") == 2 and d["exact"] == 1.0 == d["step_f1"]

    def copier(texts):  # every "action -> observation" step of the trajectory, in order
        steps = texts[0].split("traj: ", 1)[1].split("\n")[0].split(" | ")
        return [_add("put a mug in desk: " + " > ".join(s.split(" -> ")[0] for s in steps))]

    assert entry_quality([won], copier).as_dict()["step_f1"] == 1.0
    noisy = entry_quality([won], copier, missteps=2, seed=3).as_dict()
    assert noisy["exact"] == 0.0 and noisy["step_f1"] < 1.0
