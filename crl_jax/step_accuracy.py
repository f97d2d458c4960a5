"""How well an actor imitates the expert, one decision at a time.

End-to-end success compounds every per-step error, so it hides *which*
decisions a weak actor gets wrong. Here the expert plays held-out tasks, and
at every state of its trajectory the actor (greedy) proposes the next action
from the prompt the rollout would render; the report gives, per expert verb
(go, take, open, move, ...), how often the proposal equals the expert's
action and how often it is at least accepted by the environment.

    python experiments/actor_step_accuracy.py --config=alfworld_cpu
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Callable, Sequence

from crl_jax import prompts
from crl_jax.warmstart import Demo, demo_view


@dataclasses.dataclass
class VerbAccuracy:
    states: int = 0
    exact: int = 0  # proposal == expert action
    accepted: int = 0  # proposal among the environment's admissible actions

    def as_dict(self) -> dict:
        n = max(self.states, 1)
        return {"states": self.states, "exact": self.exact / n, "accepted": self.accepted / n}


def expert_views(demos: Sequence[Demo], history: int, list_actions: str,
                 show_first_observation: bool) -> list[tuple[prompts.TurnView, str, set]]:
    """(what the actor would see, the expert's action, the admissible actions)
    at every state of every winning demonstration, rendered as a rollout does
    (no experience entry)."""
    out = []
    for d in demos:
        if not d.won:
            continue
        for t, action in enumerate(d.actions):
            view = demo_view(d, t, history, list_actions, show_first_observation)
            out.append((view, action, set(d.valid[t]) if d.valid else set()))
    return out


def step_accuracy(states: Sequence[tuple[prompts.TurnView, str, set]],
                  propose: Callable[[list[prompts.TurnView]], list[str]],
                  batch: int = 64) -> dict[str, VerbAccuracy]:
    """Per expert verb (the action's first word) and "all": counts of states,
    exact matches and accepted proposals. ``propose`` maps views to actions."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    stats: dict[str, VerbAccuracy] = collections.defaultdict(VerbAccuracy)
    for i in range(0, len(states), batch):
        chunk = states[i:i + batch]
        proposals = propose([v for v, _, _ in chunk])
        if len(proposals) != len(chunk):
            raise ValueError(f"propose returned {len(proposals)} actions for {len(chunk)} views")
        for (_, gold, valid), got in zip(chunk, proposals):
            for key in (gold.split(" ")[0], "all"):
                s = stats[key]
                s.states += 1
                s.exact += got.strip() == gold
                s.accepted += got.strip() in valid
    return dict(stats)


def format_report(stats: dict[str, VerbAccuracy]) -> str:
    rows = ["| expert verb | states | exact | accepted |", "|---|---|---|---|"]
    order = sorted((k for k in stats if k != "all"), key=lambda k: -stats[k].states) + ["all"]
    for k in order:
        if k in stats:
            d = stats[k].as_dict()
            rows.append(f"| {k} | {d['states']} | {d['exact']:.2f} | {d['accepted']:.2f} |")
    return "\n".join(rows)
