"""Replay one action sequence through two ALFWorld engines and compare.

Used by the equivalence tests and the alfworld_equivalence diagnostic. The
driver mixes expert actions, random admissible actions and invalid inputs
(the pre-0.4 `put X in/on Y`, changed case, doubled spaces, empty, 500
characters, padded with whitespace); every step's feedback, admissible
list and win must be identical.
"""
from __future__ import annotations

import dataclasses
import random

from crl_jax.envs.alfworld_expert import AlfredExpert


@dataclasses.dataclass
class Comparison:
    steps: int                 # steps compared (after the reset)
    mismatch: tuple | None     # (history, real result, fast result) or None
    won: bool                  # the episode was won (both engines agreed)


def junk_actions(admissible, rng: random.Random) -> list[str]:
    pick = rng.choice(admissible)
    out = ["", " ", "x" * 500, pick.upper(), pick.replace(" ", "  ", 1), "  " + pick + "\n"]
    if pick.startswith("move "):
        obj, _, rec = pick[5:].partition(" to ")
        out += [f"put {obj} in {rec}", f"put {obj} on {rec}"]
    return out


def compare_engines(record, engine_a, engine_b, steps: int, rng: random.Random,
                    policy: str = "mixed", spec=None) -> Comparison:
    """policy: 'expert' (expert only), 'random' (random admissible, 10% junk)
    or 'mixed' (half expert, the rest random/junk)."""
    if policy not in ("expert", "random", "mixed"):
        raise ValueError(f"policy must be expert, random or mixed, got {policy!r}")
    first_a, first_b = engine_a.reset(), engine_b.reset()
    if first_a != first_b:
        return Comparison(0, ([], first_a, first_b), False)
    obs, admissible, won = first_a
    expert = AlfredExpert(record, spec)
    expert.observe(obs, admissible)
    history = []
    for t in range(steps):
        u = rng.random()
        if policy == "expert" or (policy == "mixed" and u < 0.5):
            cmd = expert.act()
        elif u < 0.9:
            cmd = rng.choice(admissible)
        else:
            cmd = rng.choice(junk_actions(admissible, rng))
        history.append(cmd)
        res_a, res_b = engine_a.step(cmd), engine_b.step(cmd)
        if res_a != res_b:
            return Comparison(t + 1, (history, res_a, res_b), False)
        obs, admissible, won, _ = res_a
        expert.observe(obs, admissible, cmd)
        if won:
            return Comparison(t + 1, None, True)
    return Comparison(steps, None, False)
