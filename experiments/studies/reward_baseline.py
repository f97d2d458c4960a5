"""What credits an entry, not a figure of the
paper: r(m) as the paper defines it (Eq. 3, the mean +1/-1 outcome of the
episodes the entry guided) against r(m) less the mean outcome of the free
episodes of the same task in the same step (controls.reward_baseline=free:
whether the entry helped, not whether the game was easy), on both CPU
presets (alfworld_cpu: figure reward_baseline; minihack_room_cpu:
reward_baseline_minihack), 3 seeds, each seed one warm start for both arms.

    python experiments/figures/reproduce.py --budget=full --only=reward_baseline

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import FINALS, Variant, full_budget_variant_script
from experiments.figures.fig6_success import COMP
from experiments.figures.script import figure_main

# (figure name, preset)
FIGURES = (("reward_baseline", "alfworld_cpu"), ("reward_baseline_minihack", "minihack_room_cpu"))
TITLE = "What credits an entry: r(m) with and without the free episodes' baseline"
FREE = "Comp. RL, r(m) less the free episodes' mean"
VARIANTS = (Variant(COMP), Variant(FREE, extra=("controls.reward_baseline=free",)))
REWARD_FINALS = (*FINALS, ("train/success_guided", 5, "guided success"),
                 ("train/success_free", 5, "free success"),
                 ("extractor/reward_mean", 5, "extractor reward"))


arms, make = full_budget_variant_script(FIGURES, TITLE, VARIANTS, COMP, REWARD_FINALS)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
