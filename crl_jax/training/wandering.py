"""Trajectories like the actor's for the extractor's warm start on households.

The extractor learns to read lessons from expert demonstrations, and in RL
it reads the actor's episodes, which it reads far worse (docs/FINDINGS.md,
"Households: the extractor reads the expert's episodes, not the actor's").
The actor walks to the destination first, takes and moves other objects,
opens what it need not, and stops at the turn cap, where the expert goes
straight to the object.

A wandering expert plays like that: each turn, with probability ``rate``,
it sends an action drawn from what the game admits instead of its own; it
still reads every step's feedback, so it picks up where it left off. Its
episodes end at the RL turn cap, won or lost, and their lessons are what
they show (``lesson_demos.trajectory_lesson``), so the extractor is taught
to read where the goal's object was taken from whatever else the episode
did.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from crl_jax.envs.registry import make_expert
from crl_jax.training.logs import progress_bar
from crl_jax.training.warmstart import Demo, play_expert

# Admissible commands that change nothing and tell nothing about homes: the
# actor rarely sends them, and drawing them would only shorten the wander.
_IDLE = ("look", "inventory", "help")


class WanderingExpert:
    """``expert`` (reset(), act(env)) that sends a random admissible action
    (``env.last_admissible``, idle commands left out) instead of its own with
    probability ``rate`` each turn. Its own decision is asked for every turn,
    so it has read the last step's feedback (a pick-up or a move the random
    action made) before it next chooses."""

    def __init__(self, expert, rate: float, rng: np.random.Generator):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate!r}")
        self.expert, self.rate, self.rng = expert, rate, rng

    def reset(self) -> None:
        self.expert.reset()

    def act(self, env) -> str:
        own = self.expert.act(env)
        if self.rate and self.rng.random() < self.rate:
            options = [a for a in getattr(env, "last_admissible", ()) if a not in _IDLE]
            if options:
                return options[int(self.rng.integers(len(options)))]
        return own


def wandering_demos(sources: Sequence, demos: Sequence[Demo], rate: float, max_turns: int,
                    rng: np.random.Generator) -> list[Demo]:
    """One wandering expert's episode (``rate``, capped at ``max_turns``) on
    each demonstration's game, from the source (a TaskSource: env_name,
    make, expert) of its environment, in the demonstrations' order."""
    by_env = {s.env_name: s for s in sources}
    missing = sorted({d.env_name for d in demos} - set(by_env))
    if missing:
        raise ValueError(f"no task source for the demonstrations of {missing}")
    out: list[Demo] = []
    for name, src in by_env.items():
        tasks = [d.task for d in demos if d.env_name == name]
        if not tasks:
            continue
        env = src.make()
        expert = WanderingExpert(make_expert(src.expert or name), rate, rng)
        bar = progress_bar(len(tasks), f"wandering expert ({name})", "game")
        try:
            for task in tasks:
                out.append(play_expert(env, task, expert, max_turns, name))
                bar.update(1)
        finally:
            bar.close()
            env.close()
    return out
