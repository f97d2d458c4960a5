"""Fig. 3, the MiniHack Room pilot: Baseline, Offline Exp. (bank built once by
the fixed extractor), Static Online Exp. (fixed extractor maintains the bank
online) and Comp. RL; and the advantage schemes: all-guided rollouts and
mixed-group advantages (both fail in the paper) against split (works).
At the full budget the left panel is drawn on ALFWorld too.

    python experiments/figures/fig3_pilot.py --budget=quick
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import Variant, variant_arms, variant_figure
from experiments.figures.fig6_success import BASE, COMP
from experiments.figures.script import figure_main

PRESET = "minihack_room_cpu"
# Fig. 3 left is drawn on ALFWorld too (the paper's pilot is MiniHack only);
# its Baseline and Comp. RL arms are Fig. 6's runs.
ALFWORLD = "alfworld_cpu"
EXPERIENCE = (Variant(BASE, "none", paper="reference"),
              Variant("Offline Exp.", "offline", paper="below Comp. RL"),
              Variant("Static Online Exp.", "static_online", paper="below Comp. RL"),
              Variant(COMP, paper="best"))
ADVANTAGES = (Variant("All-guided", extra=("experience.guided_fraction=1.0",), paper="fails"),
              Variant("Mixed-group adv.", extra=("advantages.mode=mixed",), paper="fails"),
              Variant(COMP + " (split adv.)", paper="works"))


def arms(budget: str):
    alfworld = [] if budget == "quick" else variant_arms(ALFWORLD, budget, EXPERIENCE)
    return (variant_arms(PRESET, budget, EXPERIENCE) + variant_arms(PRESET, budget, ADVANTAGES)
            + alfworld)


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return [variant_figure("fig3a_pilot_experience", "Fig. 3 (left): how experience is built",
                           PRESET, budget, root, out_dir, EXPERIENCE, BASE),
            variant_figure("fig3b_pilot_advantages", "Fig. 3 (right): guided rollouts and advantages",
                           PRESET, budget, root, out_dir, ADVANTAGES, COMP + " (split adv.)")
            ] + ([] if budget == "quick" else [  # the quick budget's hour has no room for it
                variant_figure("fig3a_alfworld_experience", "Fig. 3 (left) on ALFWorld: how "
                               "experience is built", ALFWORLD, budget, root, out_dir,
                               EXPERIENCE, BASE)])


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
