"""Task sources: which environment instances and task ids a run trains and
evaluates on, for every environment family, with disjoint train/eval sets."""
from __future__ import annotations

import dataclasses
from typing import Callable

from crl_jax.envs.registry import make_env

_EVAL_SEED_OFFSET = 1_000_000  # seed-based envs: eval seeds never overlap train seeds


@dataclasses.dataclass
class TaskSource:
    env_name: str
    make: Callable[[], object]  # a new environment instance
    tasks: list  # task ids accepted by env.reset
    expert: str  # registry name of the expert


def _alfworld_games(split: str, num_generated: int, seed: int, task_types: tuple = (),
                    room_size: str = "full", households=None):
    from crl_jax.envs.alfworld_data import load_games
    from crl_jax.envs.alfworld_generator import generate_games

    if households is not None:  # an alfworld_households.HouseholdSplit (holds env.task_types)
        return households.games(split, num_generated if split == "generated"
                                else max(64, num_generated // 4))
    if split == "generated_unseen":
        raise ValueError("split generated_unseen is the unseen households' (env.households)")
    if split in ("generated", "generated_eval"):
        n = num_generated if split == "generated" else max(64, num_generated // 4)
        start = seed + (_EVAL_SEED_OFFSET if split == "generated_eval" else 0)  # unseen games
        if not task_types:
            return generate_games(n, seed=start, room_size=room_size)
        per = -(-n // len(task_types))
        games = [g for i, tt in enumerate(task_types)
                 for g in generate_games(per, seed=start + i * 100_000, task_type=tt,
                                             room_size=room_size)]
        return tuple(games[:n])
    if room_size != "full":
        raise ValueError(f"room_size={room_size!r} applies to generated games only, not split {split!r}")
    games = load_games(split)
    return tuple(g for g in games if not task_types or g.task_type in task_types)


# The expert demonstrates under a looser cap than RL's: a turn cap tight
# enough to make memory pay would otherwise drop the longer solutions from
# the demonstrations (and the actor would imitate only the easy games).
DEMO_TURNS_FACTOR = 3


def episode_cap(cfg) -> int:
    """The turns an RL or evaluation episode may take."""
    return cfg.env.max_episode_steps or cfg.rollout.max_turns


def task_source(env_name: str, split: str, num_generated: int, seed: int, max_steps: int,
                lenient_actions: bool = False, num_tasks: int | None = None,
                task_types: tuple = (), room_size: str = "full",
                seeded_clock: bool = False, households=None) -> TaskSource:
    """``split`` selects train or eval tasks: ALFWorld takes a pack split
    (train, valid_seen, valid_unseen) or generated / generated_eval (with
    ``households``, an alfworld_households.HouseholdSplit, also
    generated_unseen); other environments take "train" (seeds from 0) or
    "eval" (seeds from 1e6)."""
    if env_name.startswith("alfworld"):
        games = _alfworld_games(split, num_generated, seed, task_types, room_size, households)
        if num_tasks:
            games = games[:num_tasks]
        return TaskSource(env_name, lambda: make_env(env_name, games=games, max_steps=max_steps,
                                                     lenient_actions=lenient_actions),
                          list(range(len(games))), env_name)
    is_eval = split in ("eval", "generated_eval", "valid_unseen", "valid_seen")
    start = _EVAL_SEED_OFFSET if is_eval else 0
    count = num_tasks or (256 if is_eval else 100_000)
    kwargs = {"seeded_clock": True} if seeded_clock and env_name.startswith("MiniHack-") else {}
    return TaskSource(env_name, lambda: make_env(env_name, **kwargs),
                      list(range(start + seed, start + seed + count)),
                      env_name)


def household_split(cfg):
    """The run's households (an alfworld_households.HouseholdSplit; None
    without env.households)."""
    e = cfg.env
    if not e.households:
        return None
    from crl_jax.envs.alfworld_households import HouseholdSplit
    return HouseholdSplit(e.households, e.pool_households, e.unseen_households, e.home_rate,
                          e.room_size, cfg.warm_start.seed, e.drawn_households,
                          tuple(e.task_types))
