"""Breadth-first Sokoban solver: shortest action sequence (in moves).

States are (player cell, sorted box cells). In a 6x6 room with 2 boxes
there are at most a few thousand, so a plain BFS is instant and gives the
optimal demonstration.
"""
from __future__ import annotations

import collections

# Action name -> (d_row, d_col).
DIRECTIONS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}

Cell = tuple[int, int]


def apply_move(walls: frozenset[Cell], player: Cell, boxes: tuple[Cell, ...],
               action: str) -> tuple[Cell, tuple[Cell, ...], bool]:
    """Sokoban rules for one move: returns (player, boxes, moved). A push
    succeeds only into a free cell (no wall, no box)."""
    dr, dc = DIRECTIONS[action]
    nxt = (player[0] + dr, player[1] + dc)
    if nxt in walls:
        return player, boxes, False
    if nxt in boxes:
        beyond = (nxt[0] + dr, nxt[1] + dc)
        if beyond in walls or beyond in boxes:
            return player, boxes, False
        boxes = tuple(sorted(beyond if b == nxt else b for b in boxes))
    return nxt, boxes, True


def solve(walls: frozenset[Cell], targets: frozenset[Cell], player: Cell,
          boxes: tuple[Cell, ...], max_states: int = 200_000
          ) -> list[str] | None:
    """Shortest list of actions that puts every box on a target, or None
    if the level is unsolvable (or needs more than max_states states)."""
    start = (player, tuple(sorted(boxes)))
    if set(start[1]) == set(targets):
        return []
    prev: dict = {start: None}
    queue = collections.deque([start])
    while queue and len(prev) < max_states:
        state = queue.popleft()
        for action in DIRECTIONS:
            p, b, moved = apply_move(walls, state[0], state[1], action)
            new = (p, b)
            if not moved or new in prev:
                continue
            prev[new] = (state, action)
            if set(b) == set(targets):
                plan = []
                while prev[new] is not None:
                    new, act = prev[new]
                    plan.append(act)
                return plan[::-1]
            queue.append(new)
    return None
