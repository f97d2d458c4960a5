"""The text-environment protocol every environment in crl_jax.envs follows.

An environment is a multi-turn text game: ``reset`` gives the first
observation, ``step`` takes the agent's action text. Bad actions (empty,
unparseable, huge, not admissible) never raise: the environment answers as
the original game does and flags ``info.invalid_action``.

``StepInfo.subtask_events`` names the subgoals first satisfied at this step
(for example ``("take",)`` in ALFWorld when the target object is first
picked up); the subtask-decomposed advantages (SDAE) are built from them.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable


@dataclasses.dataclass(frozen=True)
class StepInfo:
    """What an environment reports beside the observation text.

    Attributes:
      won: the task is solved (the episode's success signal).
      admissible_actions: the actions the game accepts now (empty tuple when
        the game has no finite action list, e.g. free-text search).
      goal: the task sentence, the same for the whole episode.
      subtask_events: subgoals first satisfied at this step, in order.
      subtasks: the full ordered subgoal list of this task (the taxonomy
        SDAE splits the reward over); constant over the episode.
      invalid_action: the last action was not accepted by the game.
      task_id: a stable identifier of the task/game (seed or game path).
      extra: environment-specific details (never needed by the trainer).
    """

    won: bool = False
    admissible_actions: tuple[str, ...] = ()
    goal: str = ""
    subtask_events: tuple[str, ...] = ()
    subtasks: tuple[str, ...] = ()
    invalid_action: bool = False
    task_id: str = ""
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class StepResult:
    observation: str
    reward: float
    done: bool
    info: StepInfo


@runtime_checkable
class TextEnv(Protocol):
    """A multi-turn text environment.

    ``reset(task)`` accepts a task identifier (game id / seed) or None for the
    next task of the environment's own deterministic sequence, and returns
    (observation, info). ``step(action)`` returns a StepResult.
    """

    name: str

    def reset(self, task: str | int | None = None) -> tuple[str, StepInfo]: ...

    def step(self, action: str) -> StepResult: ...

    def close(self) -> None: ...
