"""Beyond the paper: SDAE (subtask-decomposed advantages, a reconstruction,
PAPER.md section 3) on and off, with and without Complementary RL, on ALFWorld
(whose environment defines the subtasks).

    python experiments/figures/sdae.py --budget=quick
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import Variant, variant_arms, variant_figure
from experiments.figures.fig6_success import BASE, COMP
from experiments.figures.script import figure_main

PRESET = "alfworld_cpu"
# Both switches explicit: the preset's own default (alfworld_cpu has SDAE on)
# must not make the "off" arms silently equal to the "on" ones.
OFF, ON = ("advantages.sdae=false",), ("advantages.sdae=true",)
VARIANTS = (Variant(BASE, "none", OFF),
            Variant(BASE + " + SDAE", "none", ON),
            Variant(COMP, extra=OFF),
            Variant(COMP + " + SDAE", extra=ON))


def arms(budget: str):
    return variant_arms(PRESET, budget, VARIANTS)


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return [variant_figure("sdae", "SDAE on/off, with and without Comp. RL", PRESET, budget,
                           root, out_dir, VARIANTS, BASE)]


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
