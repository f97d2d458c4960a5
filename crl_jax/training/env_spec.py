"""The environment section of a run's configuration (``env.*``): which
environments and games a run trains and evaluates on, ALFWorld's generated
rooms and households among them."""
from __future__ import annotations

import dataclasses


# ALFWorld: the real pack's splits and the generated games; the other
# environments draw seeds, "eval" (or an ALFWorld held-out name, which a
# mixture shares) from 1e6, anything else from 0.
ALFWORLD_SPLITS = ("generated", "generated_eval", "train", "valid_seen", "valid_unseen")
SEED_SPLITS = ("train", "eval", "generated", "generated_eval", "valid_seen", "valid_unseen")


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    names: tuple[str, ...] = ("alfworld",)  # several = a multi-task mixture
    train_split: str = "generated"  # ALFWorld: generated | train; others: seeds
    eval_split: str = "generated_eval"  # ALFWorld: valid_unseen at paper scale
    num_generated: int = 400
    """Generated training games (ALFWorld generated split); eval gets a quarter."""
    # ALFWorld generated games and households: restrict to these task types (empty = all six)
    task_types: tuple[str, ...] = ()
    # ALFWorld generated games: full | small (a curriculum for tiny models) |
    # medium (the households' rooms: kinds told apart by their numbers)
    room_size: str = "full"
    num_eval_tasks: int = 32
    """Held-out games each evaluation plays (with and without experience)."""
    lenient_actions: bool = False
    """Map near-miss actions (case, spacing, put X in/on Y) to valid ones."""
    max_episode_steps: int = 0  # 0 = the rollout's max_turns
    # MiniHack: NetHack's clock rules (full/new moon luck, Friday 13th, night,
    # the midnight hour) follow the task seed instead of the machine's clock.
    # Off, as NLE's default: then one seed plays differently at 00:30 than at
    # 14:30 (1 of 64 expert episodes on the eval seeds), so arms run at other
    # hours see other games. Off keeps the warm starts cached before it existed.
    seeded_clock: bool = False
    households: int = 0
    """ALFWorld generated games from this many households (rooms whose objects
    have homes, crl_jax/envs/alfworld_households.py), the RL pool's and the
    warm start's; 0: every game its own room, objects placed uniformly."""
    pool_households: int = 0
    """The first this many households are the RL pool (RL draws their games,
    evaluation new games of theirs); the warm start demonstrates the others."""
    drawn_households: int = 0
    """RL draws the games of only the pool's first this many households (0:
    all), as many games as before, so each household gets more; the seen
    evaluation is theirs. The warm start's games and households are the same."""
    unseen_households: int = 0
    """Households no training touches, evaluated as eval_unseen_*."""
    home_rate: float = 0.5
    """How often an object of a household game lies at one of its homes
    (uniformly elsewhere otherwise; 0: no regularity). The default is
    calibrated on the real train pack (docs/FINDINGS.md, "Household regularity")."""

    def check_splits(self) -> None:
        """Both splits name games the environments have (a ValueError if not)."""
        alfworld = any(n.startswith("alfworld") for n in self.names)
        valid = ALFWORLD_SPLITS if alfworld else SEED_SPLITS
        for key in ("train_split", "eval_split"):
            if getattr(self, key) not in valid:
                raise ValueError(f"env.{key}={getattr(self, key)!r}; valid"
                                 f"{' with ALFWorld' if alfworld else ''}: {', '.join(valid)}")

    def check_households(self, task_pool: int) -> None:
        """The household settings make sense together (a ValueError if not)."""
        if not self.households:
            if self.pool_households or self.unseen_households or self.drawn_households:
                raise ValueError("env.pool_households, env.drawn_households and "
                                 "env.unseen_households need "
                                 "env.households > 0")
            return
        if self.names != ("alfworld",) or self.train_split != "generated":
            raise ValueError("env.households applies to ALFWorld's generated games: "
                             "env.names=alfworld and env.train_split=generated")
        if not 0 < self.pool_households < self.households:
            raise ValueError(f"env.pool_households={self.pool_households} must be in "
                             f"[1, env.households={self.households}): the warm start needs "
                             f"households of its own")
        if not 0 <= self.drawn_households <= self.pool_households:
            raise ValueError(f"env.drawn_households={self.drawn_households} must be in "
                             f"[0, env.pool_households={self.pool_households}] (0: all)")
        if self.unseen_households < 0:
            raise ValueError("env.unseen_households must be >= 0")
        if not 0.0 <= self.home_rate <= 1.0:
            raise ValueError(f"env.home_rate={self.home_rate!r} must be in [0, 1]")
        if task_pool:
            raise ValueError("with env.households the RL pool is env.pool_households' games: "
                             "set train.task_pool=0")
