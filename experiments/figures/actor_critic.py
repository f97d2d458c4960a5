"""The Actor-Critic variant (paper App. B) at CPU scale: the actor judges
each retrieved entry before acting (accept / refine / reject), and the
verdict adds to the entry's credit (crl_jax/rl/critic.py).

A tiny actor judges only what its warm start taught it, so the variant runs
from a warm start that also teaches judging (warm_start.judge_fraction: own
plans accepted, other games' rejected). Its controls come from that same
warm start: the null, Comp. RL without the critic, and the oracle, a
goal-match critic (controls.critic=goal: an entry is accepted exactly when
it names the episode's own goal, what a perfect judge would do here); Comp.
RL and the baseline from the ladder's warm start are drawn beside them. The paper reports the variant helps early
but searches far slower (1.21 s against 0.04 s a search); the table gives
this run's per-entry judging time beside retrieval's, and how often the
actor kept an entry for its own goal and one for another goal.

    python experiments/figures/reproduce.py --budget=full --only=actor_critic

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import sys


from experiments.figures.ablation import (
    FINALS, WHOLE_RUN, Variant, full_budget_variant_script)
from experiments.figures.fig6_success import BASE, COMP
from experiments.figures.script import figure_main

PRESET = "alfworld_cpu"
JUDGING = ("warm_start.judge_fraction=1.0",)
CRITIC = "Comp. RL + Actor-Critic"
ORACLE = "Comp. RL + goal-match critic (control)"
NULL = "Comp. RL, judging warm start, no critic"
GOAL_FILTER = "Comp. RL + goal filter, ladder's warm start (control)"
VARIANTS = (Variant(CRITIC, extra=(*JUDGING, "experience.actor_critic=true"),
                    paper="helps early; search 1.21 s vs 0.04 s"),
            Variant(ORACLE, extra=(*JUDGING, "experience.actor_critic=true",
                                   "controls.critic=goal")),
            Variant(NULL, extra=JUDGING),
            # The goal filter on the ladder's warm start, which never learned
            # to judge: Comp. RL's bank with every other game's plan withheld
            # (a control, since it reads the true goal), beside Comp. RL and
            # the baseline from that warm start.
            Variant(GOAL_FILTER, extra=("experience.actor_critic=true", "controls.critic=goal")),
            Variant(COMP), Variant(BASE, "none"))
CRITIC_FINALS = (*FINALS, WHOLE_RUN, ("train/entry_goal", 5, "entries for the own goal"),
                 ("train/critic_kept_own_goal", 5, "kept, own goal"),
                 ("train/critic_kept_other_goal", 5, "kept, other goal"),
                 ("train/critic_s_per_entry", 5, "judging s / entry"),
                 ("train/retrieval_s_per_query", 5, "retrieval s / query"))


arms, make = full_budget_variant_script(
    (("actor_critic", PRESET),), "Actor-Critic variant (App. B) at CPU scale", VARIANTS, NULL,
    CRITIC_FINALS)


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
