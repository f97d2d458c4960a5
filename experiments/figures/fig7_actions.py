"""Fig. 7: actions per episode over training for Fig. 6's runs (paper: 1.5x
fewer on MiniHack Room, 2x fewer on ALFWorld with Comp. RL). A failed episode
runs to the turn cap, so actions also track success: actions_when_won
(successful episodes only) is reported beside it.

    python experiments/figures/fig7_actions.py --budget=quick
"""
from __future__ import annotations

import sys


from experiments.figures.fig6_success import (EVAL_LAST_K, TRAIN_LAST_K, arms,
                                              comparison_figure)
from experiments.figures.script import figure_main

__all__ = ["arms", "make"]  # the figure-module protocol; Fig. 7 draws Fig. 6's runs
NAME = "fig7_actions"
PAPER_FEWER = {"alfworld_cpu": "2x", "minihack_room_cpu": "1.5x", "webshop_cpu": "n/a"}


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    # Baseline / Comp. RL: how many times fewer actions Comp. RL takes.
    return comparison_figure(
        root, budget, out_dir, name=NAME, heading="Fig. 7: actions per episode",
        curve_keys=("train/actions", "SPLIT/actions"), ylabel="actions per episode",
        metrics=(("train actions", "train/actions", "train/actions", TRAIN_LAST_K),
                 ("train actions, won episodes", "train/actions_when_won",
                  "train/actions_when_won", TRAIN_LAST_K),
                 ("eval actions, no exp. at test", "eval_no_exp/actions", "eval_no_exp/actions",
                  EVAL_LAST_K)),
        paper=PAPER_FEWER,
        caption="Final actions per episode; last column: Baseline / Comp. RL "
                "(above 1 = Comp. RL takes fewer actions).",
        ratio_column="Baseline / Comp. RL (fewer)", base_over_comp=True)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
