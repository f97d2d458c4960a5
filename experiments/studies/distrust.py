"""Teaching the actor to distrust another game's plan: the oracle ladder's
own-plan and peer-plan rungs, Comp. RL and GRPO on a warm start whose
guided demonstrations swap the peer source for ``swap`` lines (the game's
own plan naming an object of another type, which the searching expert
ignores; crl_jax/training/guided_demos.py), beside the same four arms of
the preset's warm start (the ladder's and Fig. 6's records, not run again).

The preset's warm start shows another game's plan in a quarter of its
guided demonstrations; the actor still takes the wrong object when such a
line is in its prompt on held-out games, and Comp. RL's bank hands it other
games' plans for about half of its reads. A swap line differs from an own
line only in whose object it names, so the actor can tell them apart only
by comparing the line's goal with its own. Greedy next-action accuracy
with each line (`experiments/diagnostics/actor_step_accuracy.py --exp=none,own,peer`)
is read in docs/FINDINGS.md, "Reading diagnostics"; this figure gives what
the warm start does in RL.

    python experiments/figures/reproduce.py --budget=full --only=distrust

Full budget only, ALFWorld only (the swap source needs an object to name).
"""
from __future__ import annotations

import sys


from experiments.studies.oracle_ladder import VARIANTS as LADDER
from experiments.studies.oracle_ladder import groups_arms, groups_figure, retagged
from experiments.figures.script import figure_main

PRESET = "alfworld_cpu"
SWAP_SOURCE = "own:2,noisy1:1,swap:2"
SWAP = (f"warm_start.guided_source={SWAP_SOURCE}",)
_OWN, _PEER, _COMP, _GRPO = LADDER[0], LADDER[3], LADDER[4], LADDER[5]
PRESET_ARMS = (_OWN, _PEER, _COMP, _GRPO)  # the preset's warm start: committed records
SWAP_ARMS = retagged(PRESET_ARMS, "swap warm start", SWAP)


def arms(budget: str):
    return groups_arms(PRESET, budget, PRESET_ARMS, SWAP_ARMS)


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    groups = ((PRESET_ARMS, f"{PRESET}, the preset's warm start (own:2,noisy1:1,peer:1)"),
              (SWAP_ARMS, f"{PRESET}, swap warm start ({SWAP_SOURCE})"))
    return groups_figure("distrust", "Distrusting another game's plan (swap warm start)",
                         "Distrust of other games' plans: the preset's warm start against the "
                         "swap warm start (mean over seeds, band min..max)",
                         PRESET, budget, root, out_dir, groups)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
