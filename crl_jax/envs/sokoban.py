"""Sokoban as a text environment: 6x6 rooms (outer wall included), 2 boxes,
2 targets, the paper's symbols, generated levels that are always solvable.

A level is drawn from the seed (interior walls, targets, boxes, player on
distinct cells) and kept only if the BFS solver solves it in at least
``min_moves`` moves; so every seed gives a solvable level, and the same seed
the same level. Reward is binary success (1.0 when the last box lands on a
target). Unknown actions and blocked moves leave the state unchanged; unknown
ones are flagged ``invalid_action``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from crl_jax.envs.base import StepInfo, StepResult
from crl_jax.envs.sokoban_solver import DIRECTIONS, apply_move, solve

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = (
    "#", "_", "O", "X", "√", "P", "S")
LEGEND = ("# = wall, _ = floor, O = target, X = box, √ = box on target, "
          "P = you, S = you on a target")
GOAL = "Push every box (X) onto a target (O)."
SUBTASKS = ("one_box_placed", "all_boxes_placed")
ACTIONS = tuple(DIRECTIONS)
_ALIASES = {"north": "up", "south": "down", "west": "left", "east": "right",
            "move up": "up", "move down": "down", "move left": "left",
            "move right": "right", "push up": "up", "push down": "down",
            "push left": "left", "push right": "right"}


@dataclasses.dataclass(frozen=True)
class Level:
    walls: frozenset
    targets: frozenset
    boxes: tuple
    player: tuple
    size: int


def generate_level(seed: int, size: int = 6, num_boxes: int = 2,
                   max_inner_walls: int = 2, min_moves: int = 4,
                   max_tries: int = 1000) -> Level:
    """A solvable level drawn deterministically from ``seed``."""
    if size < 4 or num_boxes < 1 or num_boxes * 2 + 1 > (size - 2) ** 2:
        raise ValueError(f"cannot place {num_boxes} boxes in a {size}x{size} room")
    rng = np.random.default_rng(seed)
    border = {(r, c) for r in range(size) for c in range(size)
              if r in (0, size - 1) or c in (0, size - 1)}
    inner = [(r, c) for r in range(1, size - 1) for c in range(1, size - 1)]
    for _ in range(max_tries):
        n_walls = int(rng.integers(0, max_inner_walls + 1))
        picks = rng.choice(len(inner), n_walls + 2 * num_boxes + 1, replace=False)
        cells = [inner[i] for i in picks]
        walls = frozenset(border | set(cells[:n_walls]))
        targets = frozenset(cells[n_walls:n_walls + num_boxes])
        boxes = tuple(sorted(cells[n_walls + num_boxes:-1]))
        player = cells[-1]
        plan = solve(walls, targets, player, boxes)
        if plan is not None and len(plan) >= min_moves:
            return Level(walls, targets, boxes, player, size)
    raise RuntimeError(f"no solvable level found for seed {seed}")


def render_grid(level: Level, player, boxes) -> str:
    rows = []
    for r in range(level.size):
        row = []
        for c in range(level.size):
            cell, on_t = (r, c), (r, c) in level.targets
            if cell in level.walls:
                row.append(WALL)
            elif cell == player:
                row.append(PLAYER_ON_TARGET if on_t else PLAYER)
            elif cell in boxes:
                row.append(BOX_ON_TARGET if on_t else BOX)
            else:
                row.append(TARGET if on_t else FLOOR)
        rows.append("".join(row))
    return "\n".join(rows)


def parse_action(text) -> str | None:
    if not isinstance(text, str) or len(text) > 100:
        return None
    norm = " ".join(text.lower().strip().strip(".!\"'").split())
    norm = _ALIASES.get(norm, norm)
    return norm if norm in DIRECTIONS else None


class SokobanEnv:
    """Text Sokoban behind the TextEnv protocol."""

    def __init__(self, seed: int = 0, size: int = 6, num_boxes: int = 2,
                 max_steps: int = 100):
        self.name = f"Sokoban-{size}x{size}-{num_boxes}box"
        self._size, self._num_boxes, self._max_steps = size, num_boxes, max_steps
        self._next_seed = int(seed)
        self._done = True

    def reset(self, task: str | int | None = None) -> tuple[str, StepInfo]:
        if task is None:
            seed = self._next_seed
        elif isinstance(task, str) and task.rsplit(":", 1)[-1].lstrip("-").isdigit():
            seed = int(task.rsplit(":", 1)[-1])
        elif isinstance(task, (int, np.integer)):
            seed = int(task)
        else:
            raise ValueError(f"Sokoban task must be an int seed or 'name:seed', got {task!r}")
        self._next_seed = seed + 1
        self.seed = seed
        self.level = generate_level(seed, self._size, self._num_boxes)
        self.player, self.boxes = self.level.player, self.level.boxes
        self._turn, self._done, self._placed = 0, False, 0
        return self._text("Push the boxes onto the targets."), self._info(())

    def step(self, action: str) -> StepResult:
        if self._done:
            raise RuntimeError("step() after the episode ended; call reset()")
        name = parse_action(action)
        self._turn += 1
        if name is None:
            shown = action[:40] if isinstance(action, str) else repr(action)[:40]
            message, invalid = f'Invalid action "{shown}". Valid: up, down, left, right.', True
        else:
            self.player, self.boxes, moved = apply_move(
                self.level.walls, self.player, self.boxes, name)
            message, invalid = ("You moved " + name + "." if moved
                                else "You cannot move " + name + "."), False
        placed = self.on_target
        events = [SUBTASKS[i] for i in range(len(SUBTASKS))
                  if self._placed < (1, self._num_boxes)[i] <= placed]
        self._placed = max(self._placed, placed)
        won = placed == self._num_boxes
        self._done = won or self._turn >= self._max_steps
        return StepResult(self._text(message), 1.0 if won else 0.0, self._done,
                          self._info(events, won=won, invalid=invalid))

    def close(self) -> None:
        pass

    @property
    def on_target(self) -> int:
        return sum(b in self.level.targets for b in self.boxes)

    def solution(self) -> list[str] | None:
        """Shortest plan from the current state (the expert)."""
        return solve(self.level.walls, self.level.targets, self.player, self.boxes)

    def _text(self, message: str) -> str:
        return "\n".join([
            f"Goal: {GOAL}", f"Message: {message}", "Map:",
            render_grid(self.level, self.player, self.boxes),
            f"Legend: {LEGEND}",
            f"Boxes on targets: {self.on_target}/{self._num_boxes}",
            f"Valid actions: {', '.join(ACTIONS)}"])

    def _info(self, events, won=False, invalid=False) -> StepInfo:
        return StepInfo(won=won, admissible_actions=ACTIONS, goal=GOAL,
                         subtask_events=tuple(events), subtasks=SUBTASKS,
                         invalid_action=invalid, task_id=f"{self.name}:{self.seed}",
                         extra={"turn": self._turn})


class SokobanExpert:
    """Follows the solver's shortest plan."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._plan: list[str] = []

    def act(self, env: SokobanEnv) -> str:
        if not self._plan:
            self._plan = env.solution() or ["up"]
        return self._plan.pop(0)
