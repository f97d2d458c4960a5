"""How well the extractor distils a trajectory into an experience entry.

A garbled experience bank is invisible in success curves: guided episodes
just do a little worse. Here the expert plays held-out tasks; for each won
game the extractor (greedy) answers the prompt consolidation would render,
and its first added entry is compared with the entry its warm start was
taught to write for that trajectory (``warmstart.plan_entry``: the goal, then
the decisive actions): exact match, goal copied, and F1 of the plan's steps
as sets (order aside).

Its command line is the extractor_quality diagnostic (docs/TRAINER.md,
"Measuring a warm start or a run").
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Callable, Sequence

import numpy as np

from crl_jax.experience.operations import AddOperation, parse_operations, rejection_kind
from crl_jax.training.warmstart import Demo, demo_extractor_prompt, plan_entry, with_missteps


def plan_parts(entry: str) -> tuple[str, list[str]]:
    """'goal: a > b > c' -> ('goal', ['a', 'b', 'c'])."""
    goal, _, plan = entry.partition(":")
    return goal.strip(), [s.strip() for s in plan.split(">") if s.strip()]


def step_f1(got: Sequence[str], want: Sequence[str]) -> float:
    """F1 of two plans' steps as sets (0 when either is empty)."""
    g, w = set(got), set(want)
    both = len(g & w)
    return 0.0 if not both else 2 * both / (len(g) + len(w))


@dataclasses.dataclass
class EntryScores:
    games: int = 0
    parsed: int = 0  # the answer held an add operation
    exact: int = 0
    goal: int = 0
    f1_sum: float = 0.0
    malformed: int = 0  # answers with a rejected item, as the manager counts calls_malformed
    rejected: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add(self, response: str, want: str) -> None:
        """An extractor answer: its first added entry is scored; an answer
        without one counts as a game scoring nothing."""
        parsed = parse_operations(response, n_shown=0)
        self.malformed += parsed.malformed
        self.rejected.update(rejection_kind(r) for r in parsed.rejected)
        ops = [op for op in parsed.operations if isinstance(op, AddOperation)]
        if not ops:
            self.games += 1
            return
        self.parsed += 1
        self.score(ops[0].text, want)

    def score(self, got: str, want: str) -> None:
        """One entry against the one it should be (no parsing)."""
        self.games += 1
        (g_goal, g_plan), (w_goal, w_plan) = plan_parts(got), plan_parts(want)
        self.exact += got.strip() == want.strip()
        self.goal += g_goal == w_goal
        self.f1_sum += step_f1(g_plan, w_plan)

    def as_dict(self) -> dict:
        n = max(self.games, 1)
        return {"games": self.games, "parsed": self.parsed / n, "exact": self.exact / n,
                "goal": self.goal / n, "step_f1": self.f1_sum / n,
                "malformed": self.malformed / n, "rejected": dict(sorted(self.rejected.items()))}


def entry_quality(demos: Sequence[Demo], answer: Callable[[list[str]], list[str]],
                  missteps: int = 0, seed: int = 0) -> EntryScores:
    """Scores ``answer`` (extractor prompts -> responses, batched) on the won
    demos; with ``missteps``, each trajectory shows that many rejected actions
    (``with_missteps``, as an actor's would) and the answer is still scored
    against the clean game's plan."""
    won = [d for d in demos if d.won]
    rng = np.random.default_rng(seed)
    pool = [a for d in won for a in d.actions]
    shown = [with_missteps(d, missteps, rng, pool) if missteps else d for d in won]
    views = [demo_extractor_prompt(d) for d in shown]
    scores = EntryScores()
    for d, response in zip(won, answer(views) if views else []):
        scores.add(response, plan_entry(d))
    return scores
