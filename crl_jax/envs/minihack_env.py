"""MiniHack tasks of the paper as text environments (real nle + minihack).

Each reset seeds NetHack's core, display and level RNGs with the task seed
(reseeding off), so a seed fixes the level and every later random event.
NetHack also reads the machine's clock (full and new moon change luck, the
midnight hour and the night change monsters): the same seed and actions give
the same episode at any hour only with ``seeded_clock=True``, which has NLE
derive those from the seed.

Reward is the paper's binary success: 1.0 on the step the goal is reached
(MiniHack's raw reward > 0), else 0.0; the raw reward (with MiniHack's step
penalty) is kept in ``info.extra["raw_reward"]``. Unknown actions do not
advance the game: the agent sees NetHack-style ``Unknown command`` and
``info.invalid_action`` is set.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from crl_jax.envs import minihack_text as mt
from crl_jax.envs.base import StepInfo, StepResult

_ROOM_GOAL = "Reach the staircase down (>) in the room."
_OBS_KEYS = ("chars", "glyphs", "blstats", "message", "inv_letters",
             "inv_strs", "screen_descriptions")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    goal: str
    subtasks: tuple[str, ...]
    kind: str  # room | maze | keyroom | river: which expert strategy applies


def _room_specs() -> dict[str, TaskSpec]:
    notes = {"": "", "Random-": "", "Dark-": " The room is dark.",
             "Monster-": " A monster is in the room.",
             "Trap-": " The room holds a hidden trap.",
             "Ultimate-": " The room is dark and holds a monster and a trap."}
    specs = {}
    for size in ("5x5", "15x15"):
        for variant, note in notes.items():
            specs[f"MiniHack-Room-{variant}{size}-v0"] = TaskSpec(
                _ROOM_GOAL + note, ("reach_goal",), "room")
    return specs


TASKS: dict[str, TaskSpec] = {
    **_room_specs(),
    "MiniHack-MazeWalk-9x9-v0": TaskSpec(
        "Find the staircase down (>) in the maze.", ("reach_goal",), "maze"),
    "MiniHack-KeyRoom-Dark-S5-v0": TaskSpec(
        "Pick up the key, apply it next to the locked door to open it, and "
        "reach the staircase down (>) behind the door. The room is dark.",
        ("pick_key", "open_door", "reach_goal"), "keyroom"),
    "MiniHack-River-Narrow-v0": TaskSpec(
        "Cross the river by pushing boulders (`) into the water (}) to fill "
        "it, then reach the staircase down (>).",
        ("fill_water", "cross_river", "reach_goal"), "river"),
}


def _make_gym_env(env_id: str, max_episode_steps: int | None, seeded_clock: bool = False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # minihack imports pkg_resources
        import gymnasium as gym
        import minihack  # noqa: F401  (registers the MiniHack ids)
    kwargs = {"observation_keys": _OBS_KEYS}
    if seeded_clock:  # NLE derives moon phase, night and midnight from the seeds
        kwargs["fix_moon_phase"] = True
    if max_episode_steps is not None:
        kwargs["max_episode_steps"] = max_episode_steps
    return gym.make(env_id, **kwargs).unwrapped


class MiniHackEnv:
    """One MiniHack task behind the TextEnv protocol."""

    def __init__(self, env_id: str = "MiniHack-Room-Ultimate-5x5-v0",
                 seed: int = 0, crop_radius: int | None = None,
                 max_episode_steps: int | None = None, seeded_clock: bool = False):
        if env_id not in TASKS:
            raise ValueError(f"unknown MiniHack task {env_id!r}; "
                             f"valid: {sorted(TASKS)}")
        self.name = env_id
        self.spec = TASKS[env_id]
        self._crop_radius = crop_radius
        self._env = _make_gym_env(env_id, max_episode_steps, seeded_clock)
        self.action_names = mt.action_names(self._env.actions)
        self._next_seed = int(seed)
        self.obs: dict | None = None  # the latest raw NLE observation
        self._done = True

    # -- protocol -----------------------------------------------------
    def reset(self, task: str | int | None = None) -> tuple[str, StepInfo]:
        seed = self._next_seed if task is None else _parse_seed(task)
        self._next_seed = seed + 1
        self.seed = seed
        self._env.seed(seed, seed, reseed=False, lgen=seed)
        self.obs, _ = self._env.reset()
        self._done = False
        self._turn = 0
        self._seen_subtasks: set[str] = set()
        self._doors_closed: set[tuple[int, int]] = set()
        self._water: set[tuple[int, int]] = set()
        self._track_terrain()
        return self._text(), self._info(())

    def step(self, action: str) -> StepResult:
        if self._done:
            raise RuntimeError("step() after the episode ended; call reset()")
        index = mt.parse_action(action, self.action_names)
        if index is None:
            shown = action if isinstance(action, str) else repr(action)
            shown = shown if len(shown) <= 40 else shown[:40] + "..."
            text = self._text(message=f'Unknown command "{shown}".')
            return StepResult(text, 0.0, False, self._info((), invalid=True))
        self.obs, raw_reward, term, trunc, end = self._env.step(index)
        self._turn += 1
        won = bool(raw_reward > 0)
        self._done = bool(term or trunc)
        events = self._new_events(won)
        info = self._info(events, won=won, raw_reward=float(raw_reward),
                          end_status=str(end.get("end_status", "")))
        return StepResult(self._text(), 1.0 if won else 0.0, self._done, info)

    def close(self) -> None:
        self._env.close()

    # -- helpers ------------------------------------------------------
    @property
    def agent_xy(self) -> tuple[int, int]:
        bl = self.obs["blstats"]
        return int(bl[mt.BL_X]), int(bl[mt.BL_Y])

    def _text(self, message: str | None = None) -> str:
        return mt.render(self.obs, self.spec.goal, self.action_names,
                         message=message, crop_radius=self._crop_radius)

    def _info(self, events, invalid=False, won=False, **extra) -> StepInfo:
        return StepInfo(
            won=won, admissible_actions=self.action_names,
            goal=self.spec.goal, subtask_events=tuple(events),
            subtasks=self.spec.subtasks, invalid_action=invalid,
            task_id=f"{self.name}:{self.seed}",
            extra={"turn": self._turn, **extra})

    def _cells(self, word: str, symbol: str) -> set[tuple[int, int]]:
        """Screen cells drawn as ``symbol`` whose description is ``word``."""
        descs = self.obs["screen_descriptions"]
        out = set()
        for y, x in zip(*np.nonzero(self.obs["chars"] == ord(symbol))):
            if bytes(descs[y, x]).split(b"\x00", 1)[0] == word.encode():
                out.add((int(x), int(y)))
        return out

    def _track_terrain(self) -> set[tuple[int, int]]:
        """Remember closed doors and water seen so far; return the
        remembered ones that have since turned into something else."""
        changed = set()
        if self.spec.kind == "keyroom":
            now = self._cells("closed door", "+")
            changed |= {c for c in self._doors_closed - now
                        if self.obs["chars"][c[1], c[0]] != ord(" ")}
            self._doors_closed = (self._doors_closed - changed) | now
        if self.spec.kind == "river":
            now = self._cells("water", "}")
            changed |= {c for c in self._water - now
                        if self.obs["chars"][c[1], c[0]] != ord(" ")}
            self._water = (self._water - changed) | now
        return changed

    def _new_events(self, won: bool) -> list[str]:
        happened = []
        changed = self._track_terrain()
        kind = self.spec.kind
        if kind == "keyroom":
            inv = " ".join(mt.inventory_lines(self.obs))
            if " key" in inv:
                happened.append("pick_key")
            if changed:
                happened.append("open_door")
        if kind == "river":
            if changed:
                happened.append("fill_water")
            if self._water and self.agent_xy[0] > max(x for x, _ in self._water):
                happened.append("cross_river")
        if won:
            happened.append("reach_goal")
        events = [e for e in happened if e not in self._seen_subtasks]
        self._seen_subtasks.update(events)
        return events


def _parse_seed(task) -> int:
    if isinstance(task, (int, np.integer)):
        return int(task)
    text = str(task).rsplit(":", 1)[-1]
    if not text.lstrip("-").isdigit():
        raise ValueError(f"MiniHack task must be an int seed or "
                         f"'<env_id>:<seed>', got {task!r}")
    return int(text)
