"""Entry quality through RL (crl_jax/training/entry_tracking.py), by hand."""
import json

import pytest

from crl_jax.rl.rollout import Episode
from crl_jax.training.entry_tracking import EntryTracker

PLANS = {("alfworld", 0): "put a mug in desk: go to shelf 1 > take mug 1 from shelf 1 > go to desk 1",
         ("alfworld", 1): "heat an egg: go to fridge 1 > take egg 2 from fridge 1"}


def _ep(task, guided=True, experience=None, won=False, judgement=None):
    """An episode as the rollout leaves it: ``experience`` retrieved (and read,
    unless ``judgement`` says otherwise)."""
    return Episode(task=task, task_key="alfworld", goal="g", guided=guided,
                   experience=judgement.text_to_read(experience) if judgement else experience,
                   retrieved=experience, judgement=judgement, won=won, env_name="alfworld")


def test_guided_metrics_score_the_entries_the_actor_read():
    tracker = EntryTracker(PLANS)
    eps = [_ep(0, experience=PLANS[("alfworld", 0)]),  # its own plan: exact
           # game 1 reading game 0's plan: another goal, no step in common
           _ep(1, experience=PLANS[("alfworld", 0)]),
           # own goal, one of two steps right: F1 = 2 * 1 / (2 + 2)
           _ep(1, experience="heat an egg: go to fridge 1 > take egg 1 from fridge 1"),
           _ep(0, experience=None), _ep(0, guided=False, experience=None)]  # not counted
    got = tracker.guided_metrics(eps)
    assert got == pytest.approx({"train/entry_exact": 1 / 3, "train/entry_goal": 2 / 3,
                                 "train/entry_step_f1": (1 + 0 + 0.5) / 3})
    assert tracker.guided_metrics([_ep(0, guided=False)]) == {}


class FakeAgent:
    def __init__(self, answers):
        self.answers, self.requests = answers, []

    def greedy_answers(self, requests):
        self.requests += requests
        return [self.answers[r.goal] for r in requests]


def test_extractor_metrics_score_greedy_entries_for_the_latest_wins():
    tracker = EntryTracker(PLANS)
    assert tracker.extractor_metrics(FakeAgent({})) == {"extractor/pool_games": 0.0}
    first, later = _ep(0, won=True), _ep(0, won=True)
    first.goal, later.goal = "first", "later"
    egg = _ep(1, won=True)
    egg.goal = "egg"
    tracker.remember([first, later, egg, _ep(1, won=False)])
    add = lambda text: json.dumps([{"op": "add", "entry": text}])
    agent = FakeAgent({"later": add(PLANS[("alfworld", 0)]), "egg": "garbled"})
    got = tracker.extractor_metrics(agent)
    assert [r.goal for r in agent.requests] == ["later", "egg"]  # the latest win of each game
    assert all(r.success for r in agent.requests)
    assert got == pytest.approx({"extractor/pool_games": 2.0, "extractor/pool_parsed": 0.5,
                                 "extractor/pool_exact": 0.5, "extractor/pool_goal": 0.5,
                                 "extractor/pool_step_f1": 0.5})
    again = EntryTracker(PLANS)
    again.load_state_dict(json.loads(json.dumps(tracker.state_dict())))
    assert again.latest == tracker.latest


def test_critic_metrics_split_verdicts_by_whether_the_entry_names_the_own_goal():
    from crl_jax.rl.critic import Judgement

    tracker = EntryTracker(PLANS)
    own, other = PLANS[("alfworld", 0)], PLANS[("alfworld", 1)]
    eps = [_ep(0, experience=own, judgement=Judgement("accept")),
           _ep(0, experience=own, judgement=Judgement("refine", "x")),
           _ep(0, experience=own, judgement=Judgement("reject")),
           _ep(0, experience=other, judgement=Judgement("accept")),
           _ep(0, experience=other, judgement=Judgement(None)),
           _ep(1, experience=other, judgement=Judgement("reject"))]  # task 1: its own goal
    got = tracker.guided_metrics(eps)
    # Scored on what retrieval found, whatever the actor kept of it.
    assert got["train/entry_goal"] == pytest.approx(4 / 6)
    assert got["train/critic_kept_own_goal"] == pytest.approx(2 / 4)  # accept, refine of 4
    assert got["train/critic_kept_other_goal"] == pytest.approx(1 / 2)
    assert "train/critic_kept_own_goal" not in tracker.guided_metrics(
        [_ep(0, experience=own)])  # unjudged runs: no critic metrics
