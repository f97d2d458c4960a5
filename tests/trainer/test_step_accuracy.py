"""Per-verb imitation accuracy (crl_jax/step_accuracy.py) against hand-counted values."""
import pytest

from crl_jax.step_accuracy import expert_views, format_report, step_accuracy
from crl_jax.warmstart import Demo


def _demo(won=True):
    # go to, take, go to, move: 4 states, admissible actions given before each
    return Demo("alfworld", 0, "put a cup in fridge",
                ["o0", "o1", "o2", "o3", "o4"],
                ["go to table 1", "take cup 1 from table 1", "go to fridge 1", "move cup 1 to fridge 1"],
                won, "pick_and_place_simple",
                [("go to table 1", "go to fridge 1"),
                 ("go to fridge 1", "take cup 1 from table 1"),
                 ("go to table 1", "go to fridge 1"),
                 ("go to table 1", "move cup 1 to fridge 1")])


def test_views_follow_the_rollout_rendering_and_skip_losses():
    states = expert_views([_demo(), _demo(won=False)], history=1, list_actions="non_navigation",
                          show_first_observation=True)
    assert len(states) == 4  # the failed demo contributes nothing
    view, gold, valid = states[1]
    assert gold == "take cup 1 from table 1" and "take cup 1 from table 1" in valid
    assert view.history == (("go to table 1", "o1"),) and view.observation == "o1"
    assert view.valid_actions == ("take cup 1 from table 1",)
    assert view.first_observation == "o0" and states[0][0].first_observation == ""
    assert view.experience is None


def test_counts_exact_and_accepted_per_verb():
    states = expert_views([_demo()], 1, "none", False)
    # an actor that always walks to the fridge: right at state 2; admissible
    # everywhere but at the last state (where only "go to table 1" and the move are)
    always_fridge = lambda views: ["go to fridge 1"] * len(views)
    s = step_accuracy(states, always_fridge, batch=3)
    assert (s["all"].states, s["all"].exact, s["all"].accepted) == (4, 1, 3)
    assert (s["move"].exact, s["move"].accepted) == (0, 0)
    assert (s["go"].states, s["go"].exact) == (2, 1)
    assert (s["take"].exact, s["take"].accepted) == (0, 1)
    oracle = lambda views: [g for v in views for (w, g, _) in states if w is v]
    assert step_accuracy(states, oracle)["all"].as_dict()["exact"] == 1.0
    report = format_report(s)
    assert "| go | 2 | 0.50 | 1.00 |" in report and report.splitlines()[-1].startswith("| all | 4")


def test_bad_inputs_are_rejected():
    states = expert_views([_demo()], 1, "none", False)
    with pytest.raises(ValueError, match="propose returned"):
        step_accuracy(states, lambda views: [])
    with pytest.raises(ValueError, match="batch"):
        step_accuracy(states, lambda views: [], batch=0)
