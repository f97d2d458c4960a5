"""Entry quality through RL: how close the experience the actor reads, and
the entries the extractor writes, are to each pool game's true plan.

The true plan of a game is the oracle's (crl_jax/training/oracle.py with no
wrong step: the informed expert's plan on ALFWorld, the expert's actions
elsewhere), the entry the extractor's warm start was taught to write.

- Every training step, over the guided episodes that found an entry:
  ``train/entry_exact`` (the entry is its game's plan), ``train/entry_goal``
  (it names its game's goal) and ``train/entry_step_f1`` (plan steps as sets).
- Every evaluation: the extractor's greedy entry for the latest won training
  trajectory of each pool game, scored the same way against that game's
  plan (``extractor/pool_*``; ``pool_parsed``: answers holding an add).

Success curves cannot show co-evolution; these can: whether the extractor's
entries get closer to the truth as RL goes on. Tracked for runs with a fixed
RL pool (train.task_pool, every CPU preset); the paper presets draw from
every training game, whose plans would take the expert hours to play.
"""
from __future__ import annotations

from typing import Sequence

from crl_jax.diagnostics.entry_quality import EntryScores, plan_parts
from crl_jax.experience import ExtractionRequest


class EntryTracker:
    """The pool's true plans and each pool game's latest won trajectory."""

    def __init__(self, plans: dict, obs_chars: int = 40):
        self.plans = dict(plans)  # (environment, task) -> plan entry
        self.obs_chars = obs_chars  # how trajectories are shown to the extractor
        self.latest: dict[tuple, tuple[str, str]] = {}  # (environment, task) -> (goal, trajectory)

    def guided_metrics(self, episodes: Sequence, prefix: str = "train/") -> dict[str, float]:
        """Entry quality over the guided episodes whose retrieval found an
        entry; with the Actor-Critic variant also how often the actor accepted
        (or refined) an entry for its own goal and one for another goal: a
        critic that discriminates accepts the first more often."""
        found = [ep for ep in episodes
                 if ep.guided and ep.retrieved and (ep.env_name, ep.task) in self.plans]
        if not found:
            return {}
        scores, kept = EntryScores(), {True: [], False: []}
        for ep in found:
            want = self.plans[(ep.env_name, ep.task)]
            scores.score(ep.retrieved, want)
            if ep.judgement is not None:
                own = plan_parts(ep.retrieved)[0] == plan_parts(want)[0]
                kept[own].append(ep.judgement.verdict in ("accept", "refine"))
        d = scores.as_dict()
        out = {f"{prefix}entry_exact": d["exact"], f"{prefix}entry_goal": d["goal"],
               f"{prefix}entry_step_f1": d["step_f1"]}
        for own, name in ((True, "own_goal"), (False, "other_goal")):
            if kept[own]:
                out[f"{prefix}critic_kept_{name}"] = sum(kept[own]) / len(kept[own])
        return out

    def remember(self, episodes: Sequence) -> None:
        """Keeps each pool game's latest won trajectory (the last in the batch)."""
        for ep in episodes:
            key = (ep.env_name, ep.task)
            if ep.won and key in self.plans:
                self.latest[key] = (ep.goal, ep.trajectory_text(self.obs_chars))

    def extractor_metrics(self, agent) -> dict[str, float]:
        """The extractor's greedy entries for the latest won trajectories."""
        keys = sorted(self.latest, key=str)
        if not keys:
            return {"extractor/pool_games": 0.0}
        requests = [ExtractionRequest("consolidate", (), self.latest[k][0], self.latest[k][1], True)
                    for k in keys]
        scores = EntryScores()
        for key, response in zip(keys, agent.greedy_answers(requests)):
            scores.add(response, self.plans[key])
        d = scores.as_dict()
        return {"extractor/pool_games": float(d["games"]), "extractor/pool_parsed": d["parsed"],
                "extractor/pool_exact": d["exact"], "extractor/pool_goal": d["goal"],
                "extractor/pool_step_f1": d["step_f1"]}

    def state_dict(self) -> dict:
        return {"latest": [[list(k), list(v)] for k, v in self.latest.items()]}

    def load_state_dict(self, state: dict) -> None:
        self.latest = {tuple(k): tuple(v) for k, v in state["latest"]}
