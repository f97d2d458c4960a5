"""A shortest-path expert for the MiniHack tasks, for demonstrations.

It keeps its own map of what it has seen (NetHack forgets dark floor), plans
by breadth-first search on the known map, and explores under fog by walking
to the nearest known cell that borders unknown ones. Task-specific steps:
KeyRoom picks up the key and applies it next to the locked door; River
plans boulder pushes (a BFS over agent and boulder positions) that fill the
water in one row. It re-plans after every step, so surprises (a monster, a
trap, a boulder that sank without filling the water) are absorbed.
"""
from __future__ import annotations

import collections
from typing import Sequence

import numpy as np
from nle import nethack

from crl_jax.envs import minihack_text as mt

UNKNOWN, FREE, WALL, DOOR_CLOSED, DOOR_OPEN, WATER, TRAP = range(7)
ROWS, COLS = 21, 79
# (dx, dy) of each move name; orthogonal first so ties prefer them.
MOVES = {"north": (0, -1), "east": (1, 0), "south": (0, 1), "west": (-1, 0),
         "northeast": (1, -1), "southeast": (1, 1), "southwest": (-1, 1),
         "northwest": (-1, -1)}
_WATER = ("water", "moat", "lava", "molten lava")
_WALL_WORDS = ("wall", "solid rock", "tree", "iron bars", "stone")


def _desc(obs, x, y) -> str:
    return bytes(obs["screen_descriptions"][y, x]).split(b"\x00", 1)[0].decode(
        "latin-1")


class MiniHackExpert:
    """Call ``reset()`` at each episode start, then ``act(env)`` each turn
    (``env`` is a MiniHackEnv; the expert reads ``env.obs``)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.terrain = np.full((ROWS, COLS), UNKNOWN, np.int8)
        self.goal: set[tuple[int, int]] = set()
        self.keys: set[tuple[int, int]] = set()
        self.boulders: set[tuple[int, int]] = set()
        self.monsters: set[tuple[int, int]] = set()
        self.filled: set[tuple[int, int]] = set()  # water turned to floor
        self.stuck: set[tuple[int, int]] = set()  # boulders that would not move
        self._last: tuple[tuple[int, int], tuple[int, int]] | None = None
        self._plan: list[tuple[str, tuple, frozenset]] = []

    # -- perception ---------------------------------------------------
    def _observe(self, obs):
        bl = obs["blstats"]
        ax, ay = int(bl[mt.BL_X]), int(bl[mt.BL_Y])
        chars, glyphs = obs["chars"], obs["glyphs"]
        self.boulders, self.monsters = set(), set()
        for y, x in zip(*np.nonzero(chars != ord(" "))):
            x, y = int(x), int(y)
            desc = _desc(obs, x, y)
            if (x, y) == (ax, ay):  # what lies under the agent stays known
                if self.terrain[y, x] in (UNKNOWN, WALL, WATER):
                    self.terrain[y, x] = FREE
                continue
            self.keys.discard((x, y))
            self.goal.discard((x, y))
            if nethack.glyph_is_monster(int(glyphs[y, x])):
                self.monsters.add((x, y))
                if self.terrain[y, x] == UNKNOWN:
                    self.terrain[y, x] = FREE
            if self.terrain[y, x] == WATER and desc not in _WATER:
                self.filled.add((x, y))
            if "boulder" in desc:
                self.boulders.add((x, y))
                self.terrain[y, x] = FREE
            elif desc == "closed door":
                self.terrain[y, x] = DOOR_CLOSED
            elif "door" in desc:
                self.terrain[y, x] = DOOR_OPEN
            elif desc in _WATER:
                self.terrain[y, x] = WATER
            elif "trap" in desc or "web" in desc:
                self.terrain[y, x] = TRAP
            elif any(w in desc for w in _WALL_WORDS):
                self.terrain[y, x] = WALL
            else:
                self.terrain[y, x] = FREE
                if desc == "staircase down":
                    self.goal.add((x, y))
                elif "key" in desc:
                    self.keys.add((x, y))
        # Adjacent cells are always seen: a blank one there is rock.
        for dx, dy in MOVES.values():
            x, y = ax + dx, ay + dy
            if 0 <= x < COLS and 0 <= y < ROWS and chars[y, x] == ord(" "):
                self.terrain[y, x] = WALL
        # A silent failed move means the target cell is not walkable.
        if self._last is not None:
            before, target = self._last
            msg = mt.message_text(obs)
            if "in vain" in msg:
                self.stuck.add(target)
            silent = not msg or msg.startswith(("It's a wall", "It's solid stone"))
            if (ax, ay) == before and silent and \
                    target not in self.monsters and target not in self.boulders:
                if self.terrain[target[1], target[0]] in (UNKNOWN, FREE):
                    self.terrain[target[1], target[0]] = WALL
        return ax, ay

    # -- planning -----------------------------------------------------
    def _walkable(self, x, y, allow_traps) -> bool:
        if not (0 <= x < COLS and 0 <= y < ROWS) or (x, y) in self.boulders:
            return False
        t = self.terrain[y, x]
        return t in (FREE, DOOR_OPEN) or (allow_traps and t == TRAP)

    def _step_ok(self, x, y, nx, ny) -> bool:
        # NetHack forbids diagonal moves into or out of a doorway.
        if nx != x and ny != y:
            return DOOR_OPEN not in (self.terrain[y, x], self.terrain[ny, nx])
        return True

    def _bfs(self, start, is_target, allow_traps=False):
        """First move name of a shortest path to a cell with is_target."""
        prev = {start: None}
        queue = collections.deque([start])
        while queue:
            cell = queue.popleft()
            if cell != start and is_target(cell):
                while prev[cell][0] != start:
                    cell = prev[cell][0]
                return prev[cell][1]
            x, y = cell
            for name, (dx, dy) in MOVES.items():
                nxt = (x + dx, y + dy)
                if nxt in prev or not self._step_ok(x, y, *nxt):
                    continue
                if self._walkable(*nxt, allow_traps):
                    prev[nxt] = (cell, name)
                    queue.append(nxt)
        if not allow_traps:
            return self._bfs(start, is_target, allow_traps=True)
        return None

    def _frontier(self, cell) -> bool:
        x, y = cell
        if not self._walkable(x, y, True):
            return False
        return any(0 <= x + dx < COLS and 0 <= y + dy < ROWS
                   and self.terrain[y + dy, x + dx] == UNKNOWN
                   for dx, dy in MOVES.values())

    def act(self, env) -> str:
        obs = env.obs
        agent = self._observe(obs)
        names = env.action_names
        kind = env.spec.kind
        move = None
        if kind == "keyroom":
            has_key = any(" key" in s for s in mt.inventory_lines(obs))
            doors = {(int(x), int(y)) for y, x in
                     zip(*np.nonzero(self.terrain == DOOR_CLOSED))}
            if not has_key and agent in self.keys:
                return self._send(agent, None, "pick up")
            if not has_key and self.keys:
                move = self._bfs(agent, lambda c: c in self.keys)
            elif has_key and doors and not self.goal:
                near = {(dx + x, dy + y) for x, y in doors
                        for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
                if agent in near:
                    return self._send(agent, None, "apply")
                move = self._bfs(agent, lambda c: c in near)
        if move is None and self.goal:
            move = self._bfs(agent, lambda c: c in self.goal)
        if move is None and kind == "river" and not self.goal:
            # Look past a filled cell first: the rest of its row is unknown.
            move = self._bfs(agent, lambda c: c in self.filled and self._frontier(c))
            if move is None:
                move = self._river_move(agent)
        if move is None:
            move = self._bfs(agent, self._frontier)
        if move is None:  # nothing known to do: bump around
            move = names[int(np.random.default_rng(len(self.keys)).integers(8))]
        return self._send(agent, move, move)

    def _send(self, agent, move, action) -> str:
        if move in MOVES:
            dx, dy = MOVES[move]
            self._last = (agent, (agent[0] + dx, agent[1] + dy))
        else:
            self._last = None
        return action

    # -- River: boulder pushing ----------------------------------------
    def _river_move(self, agent):
        """Next move of a push plan that fills a water cell, re-planned when
        the world is not where the plan expected it."""
        bould = frozenset(self.boulders)
        if self._plan and self._plan[0][1] == agent and self._plan[0][2] == bould:
            return self._plan.pop(0)[0]
        self._plan = self._plan_push(agent, bould) or []
        if self._plan:
            return self._plan.pop(0)[0]
        return None

    def _river_targets(self) -> set[tuple[int, int]]:
        """The westmost water cell of each row: filling it advances a bridge.
        Rows already partly filled come first (finish the bridge begun)."""
        rows = collections.defaultdict(list)
        for y, x in zip(*np.nonzero(self.terrain == WATER)):
            rows[int(y)].append(int(x))
        begun = {y for _, y in self.filled} & set(rows)
        return {(min(v), y) for y, v in rows.items() if not begun or y in begun}

    def _plan_push(self, agent, boulders, max_states=40000):
        """Shortest plan pushing any one boulder into a target water cell:
        one BFS over (agent, which boulder, where it is now) with orthogonal
        pushes; the other boulders stay put. Returns
        [(move, agent_before, boulders_before), ...] or None."""
        targets = self._river_targets()
        if not targets:
            return None
        prev = {}
        queue = collections.deque()
        for b in boulders - self.stuck:
            prev[(agent, b, b)] = None
            queue.append((agent, b, b))
        while queue and len(prev) < max_states:
            state = queue.popleft()
            (x, y), origin, b = state
            others = boulders - {origin}
            for name, (dx, dy) in MOVES.items():
                nxt = (x + dx, y + dy)
                if nxt == b:
                    if dx and dy:
                        continue
                    beyond = (b[0] + dx, b[1] + dy)
                    if beyond in others:
                        continue
                    if beyond in targets:  # boulder falls in: plan found
                        return self._unwind(prev, state, name, others)
                    if not self._walkable(*beyond, False):
                        continue
                    new = (nxt, origin, beyond)
                elif nxt in others or not self._walkable(*nxt, False) or \
                        not self._step_ok(x, y, *nxt):
                    continue
                else:
                    new = (nxt, origin, b)
                if new not in prev:
                    prev[new] = (state, name)
                    queue.append(new)
        return None

    @staticmethod
    def _unwind(prev, state, last_move, others):
        steps = [(last_move, state)]
        while prev[state] is not None:
            state, move = prev[state]
            steps.append((move, state))
        return [(m, s[0], frozenset(others | {s[2]})) for m, s in reversed(steps)]


class MiniHackPlanExpert(MiniHackExpert):
    """The informed expert of the open rooms: follows a plan of moves from
    the start (an entry that says the way to the stairs), then searches as
    MiniHackExpert does when the plan runs out without a win or a planned
    move twice fails to move the agent (a monster in the way, a wall: a
    wrong plan). A plan step that is not a move is skipped."""

    def __init__(self, plan: Sequence[str] = ()):
        self.plan = tuple(plan)
        super().__init__()

    def reset(self):
        super().reset()
        self._todo = [s for s in self.plan if s in MOVES]
        self._sent_from: tuple[int, int] | None = None
        self._stuck = 0

    def act(self, env) -> str:
        agent = env.agent_xy
        if self._sent_from is not None:  # the last planned move: done, or to try again
            if agent != self._sent_from:
                self._todo.pop(0)
                self._stuck = 0
            else:
                self._stuck += 1
                if self._stuck >= 2:
                    self._todo = []
            self._sent_from = None
        if not self._todo:
            return super().act(env)
        self._observe(env.obs)  # keep the map for the search that may follow
        self._sent_from = agent
        move = self._todo[0]
        return self._send(agent, move, move)


def direct_moves(start: tuple[int, int], goal: tuple[int, int]) -> list[str]:
    """The king-move path from start to goal in an open room: diagonal
    steps first, then straight ones (it stays inside the rectangle the two
    cells span, so inside the room)."""
    dx, dy = goal[0] - start[0], goal[1] - start[1]
    sx, sy = (dx > 0) - (dx < 0), (dy > 0) - (dy < 0)
    names = {v: k for k, v in MOVES.items()}
    diag = min(abs(dx), abs(dy))
    moves = [names[(sx, sy)]] * diag if diag else []
    rest = (dx - sx * diag, dy - sy * diag)
    if rest != (0, 0):
        step = ((rest[0] > 0) - (rest[0] < 0), (rest[1] > 0) - (rest[1] < 0))
        moves += [names[step]] * max(abs(rest[0]), abs(rest[1]))
    return moves


def goal_of(env, task, actions: Sequence[str]) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """(start, stairs) of a game, replaying ``actions`` (a won episode's):
    the stairs are where its last move went; None when it did not win."""
    env.reset(task)
    start = env.agent_xy
    for action in actions:
        before = env.agent_xy
        step = env.step(action)
        if step.info.won:
            dx, dy = MOVES.get(action, (0, 0))
            return start, (before[0] + dx, before[1] + dy)
        if step.done:
            break
    return start, None
