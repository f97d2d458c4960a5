"""Fig. 5 ablations on MiniHack Room: the full system (merge + search-and-ask)
against no merge and no search-and-ask (paper: removing either lowers success).
The CPU presets run without search-and-ask, so "no search-and-ask" is Fig. 6's
Comp. RL run and the full system turns it on. A tiny actor never calls a tool
it was not shown, so the arms with the tool start from a warm start that
opens 30% of the unguided demonstrations with an ask call
(warm_start.ask_fraction): "no search-and-ask" differs from them in that
warm start as well as in the tool. "Empty answers" is the fair control: the
same ask-teaching warm start and the tool, but every ask is answered
"nothing found" (controls.ask_answers=nothing), so only the advice's
content differs from the full system.

At the full budget the same ablations are drawn on ALFWorld too (the paper's
Fig. 5 is on both); there an ask opens the game and so spends one of its 10
turns, a price the tool must earn back.

    python experiments/figures/fig5_ablations.py --budget=quick
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import Variant, variant_arms, variant_figure
from experiments.figures.fig6_success import BASE
from experiments.figures.script import figure_main

PRESET = "minihack_room_cpu"
ALFWORLD = "alfworld_cpu"  # full budget only: its "No search-and-ask" is Fig. 6's Comp. RL
FULL_SYSTEM = "Comp. RL (merge + search-and-ask)"
ASK = ("experience.search_and_ask=true", "warm_start.ask_fraction=0.3")
VARIANTS = (Variant(FULL_SYSTEM, extra=ASK, paper="best"),
            Variant("No merge", extra=(*ASK, "experience.merge_every=0"), paper="lower"),
            Variant("No search-and-ask", paper="lower"),  # the budgets pin it off
            Variant("Empty answers (same warm start)",
                    extra=(*ASK, "controls.ask_answers=nothing"), paper="lower"),
            Variant(BASE, "none", paper="lowest"))


def arms(budget: str):
    alfworld = [] if budget == "quick" else variant_arms(ALFWORLD, budget, VARIANTS)
    return variant_arms(PRESET, budget, VARIANTS) + alfworld


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return [variant_figure("fig5_ablations", "Fig. 5: ablations of merge and search-and-ask",
                           PRESET, budget, root, out_dir, VARIANTS, FULL_SYSTEM)
            ] + ([] if budget == "quick" else [  # the quick budget's hour has no room for it
                variant_figure("fig5_alfworld_ablations", "Fig. 5 on ALFWorld: ablations of "
                               "merge and search-and-ask", ALFWORLD, budget, root, out_dir,
                               VARIANTS, FULL_SYSTEM)])


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
