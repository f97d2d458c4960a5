"""Research controls: settings that test the method rather than make it up.

Each default is the method itself (the paper's, or the released code's where
a profile says so), so a run that never names this section runs the method.
Each other value is a control of a study (docs/FINDINGS.md names them): an
oracle that hands the actor a perfect or a deliberately wrong entry, a
judge that knows whose game an entry is for, a credit the paper does not
use, a tool that answers nothing. They sit in their own section, last in
``--help``, so the method's settings read first.
"""
from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True)
class ControlSpec:
    """Research controls (not part of the method; every default is the method)."""

    oracle_noise: int = 0
    """experience.mode=oracle: wrong steps in each plan the oracle returns."""
    oracle_source: Literal["own", "peer", "lesson", "lessonfirst"] = "own"
    """experience.mode=oracle: the episode's own game's plan, another game's
    (a null for the experience line), or (env.households) the household's
    true lesson for the goal's object type: all its homes (lesson) or its
    first home alone (lessonfirst, the form warm_start.guided_source=lessonfirst
    teaches and a lesson read from one episode has)."""
    critic: Literal["actor", "goal"] = "actor"
    """experience.actor_critic: who judges each retrieved entry. actor: the
    actor itself (the method, paper App. B); goal: an entry is accepted
    exactly when it names the episode's own goal (what a perfect judge of
    whose game an entry is for would do where goals tell games apart)."""
    reward_baseline: Literal["none", "free"] = "none"
    """What credits an entry (r(m), paper Eq. 3): none = the mean +1/-1 outcome
    of the episodes it guided (the method); free = each outcome less the mean
    outcome of the free episodes of the same task in the same step (whether
    the entry helped, not whether the game was easy)."""
    lesson_room: Literal["own", "other"] = "own"
    """Households with experience.bank.retrieval_key=lesson: a guided episode
    queries the bank for its own room's lesson (the method) or for another
    pool household's (a control: lessons read where they were not learnt;
    crl_jax/training/lesson_controls.py)."""
    lesson_reader: Literal["extractor", "rule"] = "extractor"
    """Households: who reads an episode's trajectory into a lesson at
    consolidation. extractor: the extractor model (the method); rule: a
    perfect reader of the same prompt (where the goal's type was picked up,
    first pick first; no lesson when it never was), the best the extractor
    could write from its evidence (lesson_controls.RuleLessonReader)."""
    ask_answers: Literal["extractor", "nothing"] = "extractor"
    """What the search-and-ask tool answers: the bank's best entry rewritten
    by the extractor (the method), or nothing to every ask (an ablation: an
    actor taught to ask keeps the tool's turn cost but gets no content)."""

    def __post_init__(self):
        if self.oracle_noise < 0:
            raise ValueError("controls.oracle_noise must be >= 0")


# Where the controls lived before they had a section. Saved configs with the
# old keys load at the new place (config_io.config_from_dict); a command line
# with an old key is told the new one; figure runs hash the old spelling,
# so every committed record keeps its run name.
MOVED_KEYS = {f"experience.{name}": f"controls.{name}"
              for name in ("oracle_noise", "oracle_source", "critic", "reward_baseline",
                           "ask_answers")}
