"""Retrieval at CPU scale (not a figure of the paper): what the actor reads
under Comp. RL with Eq. 6 as written and without its count penalty.

The entry tracker (crl_jax/training/entry_tracking.py) showed that on
alfworld_cpu the extractor's entries come close to the pool games' plans
(step F1 0.6-0.8 at the evaluations) while the entries guided episodes read
are mostly for other games (own goal in 0-25% of the tasks a step): Eq. 6's
count penalty (lambda log(1 + c), lambda = 0.4) outweighs the similarity gap
between a game's own entry and the others' as soon as the own one has been
read a few times (four guided episodes a task read it each step). The
paper's bank is large and its entries serve many tasks; here a game's plan
is one entry. The arm "lambda = 0" keeps Eq. 6's recency term and drops the
count term: retrieval by similarity. The arm "found by title" keys each
entry by its title (the goal it names) and queries with the episode's goal,
with a similarity floor of 0.95 (experience.bank.retrieval_key=title,
min_similarity=0.95; beyond the paper): a guided episode reads an entry for
its own goal or nothing, never another game's plan.

    python experiments/figures/reproduce.py --budget=full --only=retrieval

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import (
    FINALS, WHOLE_RUN, Variant, full_budget_variant_script)
from experiments.figures.fig6_success import BASE, COMP as OURS
from experiments.figures.script import figure_main

PRESET = "alfworld_cpu"
NO_COUNT = "Comp. RL, lambda = 0 (similarity only)"
BY_TITLE = "Comp. RL, found by title (floor 0.95)"
BY_RANK = "Comp. RL, Eq. 6 scored by rank (released)"
VARIANTS = (Variant(OURS), Variant(NO_COUNT, extra=("experience.bank.diversity_lambda=0.0",)),
            Variant(BY_TITLE, extra=("experience.bank.retrieval_key=title",
                                     "experience.bank.min_similarity=0.95")),
            Variant(BY_RANK, extra=("experience.bank.diversity_score=rank",)),
            Variant(BASE, "none"))
ENTRY_FINALS = (*FINALS, WHOLE_RUN, ("train/success_guided", 5, "guided success"),
                ("train/success_free", 5, "free success"),
                ("train/experience_found", 5, "guided episodes that found an entry"),
                ("train/entry_goal", 5, "entries for the own goal"),
                ("train/entry_step_f1", 5, "entry step F1"))


arms, make = full_budget_variant_script(
    (("retrieval", PRESET),),
    "Retrieval at CPU scale: Eq. 6's count penalty, entries found by title",
    VARIANTS, OURS, ENTRY_FINALS)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
