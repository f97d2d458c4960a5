"""What each ``experience.mode`` does: the one truth table the trainer reads.

The experience section of a run's configuration (``ExperienceSpec``,
crl_jax/training/config.py) has each column of the table as a property
(``cfg.experience.retrieves``, ``cfg.experience.trains_actor``, ...), so the
trainer asks what a mode does and never compares its name.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Literal

ExperienceMode = Literal["comp_rl", "none", "offline", "static_online", "exp_only", "oracle"]
EXPERIENCE_MODES = typing.get_args(ExperienceMode)


@dataclasses.dataclass(frozen=True)
class ModeBehaviour:
    """What one experience mode does."""

    retrieves: bool
    """Guided episodes get an entry to read (the bank's, or the oracle's plan)."""
    has_extractor: bool
    """An extractor model is built: it writes the bank (and answers search-and-ask)."""
    trains_extractor: bool
    """The extractor is trained by RL on the credit its entries earn."""
    extractor_frozen: bool
    """The extractor writes the bank with its warm-started weights, never updated."""
    trains_actor: bool
    """The actor is updated by RL."""
    static_bank: bool
    """The bank is built once from the demonstrations before RL and never
    changed after (no consolidation, no merge)."""
    is_oracle: bool
    """Retrieval returns the expert's plan of a game (a control, not a method;
    crl_jax/training/oracle.py)."""


# Columns: retrieves, has_extractor, trains_extractor, extractor_frozen,
# trains_actor, static_bank, is_oracle.
MODE_BEHAVIOURS: dict[str, ModeBehaviour] = {
    "comp_rl": ModeBehaviour(True, True, True, False, True, False, False),
    "none": ModeBehaviour(False, False, False, False, True, False, False),
    "offline": ModeBehaviour(True, True, False, True, True, True, False),
    "static_online": ModeBehaviour(True, True, False, True, True, False, False),
    "exp_only": ModeBehaviour(True, True, True, False, False, False, False),
    "oracle": ModeBehaviour(True, False, False, False, True, False, True),
}
assert set(MODE_BEHAVIOURS) == set(EXPERIENCE_MODES)


class ExperienceModeProperties:
    """The mode's behaviours as properties of a configuration section with a
    ``mode`` field (a mixin of ExperienceSpec: properties, not dataclass
    fields, so config.json, warm-start keys and run names do not change)."""

    @property
    def behaviour(self) -> ModeBehaviour:
        """The whole row of ``self.mode`` (the section's dataclass field)."""
        return MODE_BEHAVIOURS[self.mode]

    @property
    def retrieves(self) -> bool:
        """Guided episodes get an entry: every mode but none."""
        return self.behaviour.retrieves

    @property
    def has_extractor(self) -> bool:
        """An extractor is built: every mode but none and oracle."""
        return self.behaviour.has_extractor

    @property
    def trains_extractor(self) -> bool:
        """The extractor is trained: comp_rl and exp_only."""
        return self.behaviour.trains_extractor

    @property
    def extractor_frozen(self) -> bool:
        """The extractor writes the bank but is not trained: offline and static_online."""
        return self.behaviour.extractor_frozen

    @property
    def trains_actor(self) -> bool:
        """The actor is trained: every mode but exp_only."""
        return self.behaviour.trains_actor

    @property
    def static_bank(self) -> bool:
        """The bank is built once before RL, then static: offline."""
        return self.behaviour.static_bank

    @property
    def is_oracle(self) -> bool:
        """Retrieval returns the expert's plan (a control): oracle."""
        return self.behaviour.is_oracle
