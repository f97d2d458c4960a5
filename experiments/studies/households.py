"""Households (not a figure of the paper): does experience that transfers
between games pay? On alfworld_households_cpu (rooms whose objects lie at
their homes; crl_jax/envs/alfworld_households.py) the controls come first,
from one warm start per seed: no experience (GRPO) and the oracle lesson
(the household's true homes of the goal's type as the entry). If the
oracle does not train clearly above GRPO, no bank can, and the regime is
what needs changing. Then the learned bank (Comp. RL) beside them, and its
controls: Comp. RL reading another household's lessons
(controls.lesson_room=other: no gain or harm if the gain is transfer), and
Comp. RL and GRPO where objects have no homes (env.home_rate=0, their own
warm starts: the gain must vanish); Static Online (a fixed extractor) for
the co-evolution claim, with the bank's lesson accuracy against the
households' true homes (lessons/first_home) through RL.

Held-out success is reported on new games of the pool's households
(eval_*, the run's standard metrics) and on households no training touched
(eval_unseen_*), each with and without experience.

    python experiments/figures/reproduce.py --budget=full --only=households

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import sys

from experiments.figures.ablation import FINALS, WHOLE_RUN, Variant, full_budget_variant_script
from experiments.figures.fig6_success import BASE, COMP
from experiments.figures.script import figure_main

PRESET = "alfworld_households_cpu"
ORACLE = "Oracle, the household's lesson"
NO_HOMES = ("env.home_rate=0",)
VARIANTS = (Variant(BASE, "none"),
            Variant(ORACLE, "oracle", ("controls.oracle_source=lesson",)),
            Variant(COMP),
            Variant("Comp. RL, another household's lessons", extra=("controls.lesson_room=other",)),
            Variant("Comp. RL, no homes (home rate 0)", extra=NO_HOMES),
            Variant("GRPO, no homes (home rate 0)", "none", NO_HOMES),
            Variant("Static Online Exp.", "static_online"))
HOUSEHOLD_FINALS = (*FINALS, WHOLE_RUN,
                    ("train/success_guided", 5, "guided success"),
                    ("train/success_free", 5, "free success"),
                    ("eval_unseen_no_exp/success", 1, "unseen households, no exp."),
                    ("eval_unseen_with_exp/success", 1, "unseen households, with exp."),
                    ("lessons/first_home", 1, "lessons' first home right"),
                    ("lessons/coverage", 1, "pool (room, type) pairs with a lesson"))

arms, make = full_budget_variant_script(
    (("households", PRESET),),
    "Households: lessons that transfer between games of a room",
    VARIANTS, BASE, HOUSEHOLD_FINALS)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
