"""ALFWorld as a TextEnv: one wrapper over either engine.

    env = FastAlfWorldEnv(split="valid_unseen")     # pure Python, ~1000x faster
    env = RealAlfWorldEnv(split="valid_unseen")     # alfworld 0.4.2 + TextWorld
    obs, info = env.reset(0)                         # game index, game id, or None
    result = env.step("go to desk 1")

Both wrappers behave identically (same text, admissible list, reward, win
and subtask events); they differ only in the engine underneath. The reward
is 1.0 on the step that wins (and any later step), else 0.0, as in the
original. ``lenient_actions=True`` turns on the agent-side normaliser
(alfworld_text.normalize_action: case, spacing, `put X in/on Y` ->
`move X to Y`) before the engine sees the text; it is off by default so
the environment answers exactly as the original does.
"""
from __future__ import annotations

from typing import Callable, Sequence

from crl_jax.envs import alfworld_text
from crl_jax.envs.alfworld_data import GameRecord, load_games
from crl_jax.envs.alfworld_fast import FastAlfredEngine
from crl_jax.envs.alfworld_generator import generate_games
from crl_jax.envs.alfworld_pddl import GameSpec, parse_problem
from crl_jax.envs.alfworld_subtasks import SUBTASKS, SubtaskTracker
from crl_jax.envs.base import StepInfo, StepResult

_SPEC_CACHE: dict = {}


def spec_for(record: GameRecord) -> GameSpec:
    """Parsed GameSpec of a record, cached per process (parsing takes ~15 ms)."""
    key = (record.id, hash(record.pddl_problem))
    spec = _SPEC_CACHE.get(key)
    if spec is None:
        if len(_SPEC_CACHE) > 4096:
            _SPEC_CACHE.clear()
        spec = _SPEC_CACHE[key] = parse_problem(record.pddl_problem)
    return spec


class AlfWorldEnv:
    """TextEnv over an ALFWorld engine; see the module docstring."""

    name = "alfworld"

    def __init__(self, games: Sequence[GameRecord] | None = None, split: str = "valid_unseen",
                 lenient_actions: bool = False, max_steps: int | None = None, seed: int = 0,
                 num_generated: int = 200):
        """games: explicit records; else ``split`` (train / valid_seen /
        valid_unseen from the pack or $ALFWORLD_DATA, or "generated":
        ``num_generated`` procedural games from ``seed``). reset(None) walks
        the games in order starting at index ``seed``."""
        if games is not None:
            self.games = tuple(games)
        elif split == "generated":
            self.games = generate_games(num_generated, seed=seed)
        else:
            self.games = load_games(split)
        if not self.games:
            raise ValueError("AlfWorldEnv needs at least one game")
        self._by_id = {g.id: i for i, g in enumerate(self.games)}
        self.lenient_actions = lenient_actions
        self.max_steps = max_steps
        self._next_index = seed
        self.episode = 0
        self.last_observation, self.last_admissible, self.last_action = "", (), None
        self._engine = None
        self.record: GameRecord | None = None

    def _make_engine(self, record: GameRecord):
        raise NotImplementedError

    def _select(self, task: str | int | None) -> GameRecord:
        if task is None:
            index = self._next_index % len(self.games)
        elif isinstance(task, str):
            if task not in self._by_id:
                raise ValueError(f"unknown ALFWorld game id {task!r} ({len(self.games)} games loaded)")
            index = self._by_id[task]
        elif isinstance(task, int):
            index = task % len(self.games)
        else:
            raise ValueError(f"task must be a game id, an index or None, got {type(task).__name__}")
        self._next_index = index + 1
        return self.games[index]

    def reset(self, task: str | int | None = None) -> tuple[str, StepInfo]:
        record = self._select(task)
        if self._engine is None or self.record is None or self.record.id != record.id:
            self._close_engine()
            self._engine = self._make_engine(record)
            self._tracker = SubtaskTracker(record.task_type, record.params, spec_for(record))
        self.record = record
        obs, admissible, won = self._engine.reset()
        self._admissible = admissible
        self._steps = 0
        self.episode += 1
        self.last_observation, self.last_admissible, self.last_action = obs, admissible, None
        events = self._tracker.start(self._engine.facts, won)
        return obs, self._info(won, admissible, events, invalid=False, extra={})

    def step(self, action: str) -> StepResult:
        if self._engine is None:
            raise RuntimeError("call reset() before step()")
        sent = action if isinstance(action, str) else ""
        if self.lenient_actions:
            sent = alfworld_text.normalize_action(sent, self._admissible)
        obs, admissible, won, accepted = self._engine.step(sent)
        self._admissible = admissible
        self._steps += 1
        self.last_observation, self.last_admissible, self.last_action = obs, admissible, sent
        events = self._tracker.update(self._engine.facts, won) if accepted else ()
        truncated = self.max_steps is not None and self._steps >= self.max_steps and not won
        extra = {"action_sent": sent, "truncated": truncated}
        info = self._info(won, admissible, events, invalid=not accepted, extra=extra)
        return StepResult(obs, 1.0 if won else 0.0, bool(won or truncated), info)

    def _info(self, won, admissible, events, invalid, extra) -> StepInfo:
        record = self.record
        extra = {"task_type": record.task_type, **extra}
        return StepInfo(won=bool(won), admissible_actions=tuple(admissible), goal=record.task,
                        subtask_events=events, subtasks=SUBTASKS[record.task_type],
                        invalid_action=invalid, task_id=record.id, extra=extra)

    def _close_engine(self) -> None:
        if self._engine is not None and hasattr(self._engine, "close"):
            self._engine.close()
        self._engine = None

    def close(self) -> None:
        self._close_engine()


class FastAlfWorldEnv(AlfWorldEnv):
    name = "alfworld_fast"

    def _make_engine(self, record):
        return FastAlfredEngine(record, spec_for(record))


class RealAlfWorldEnv(AlfWorldEnv):
    """The original engine, run in a worker process (see alfworld_real_process
    for why it cannot share a process with usearch)."""

    name = "alfworld_real"
    _worker = None

    def _make_engine(self, record):
        from crl_jax.envs.alfworld_real import _import_textworld
        from crl_jax.envs.alfworld_real_process import IsolatedRealAlfredEngine, RealEngineWorker
        _import_textworld()  # a clear ImportError here, not in the worker
        if self._worker is None:
            self._worker = RealEngineWorker()
        return IsolatedRealAlfredEngine(record, self._worker)

    def close(self) -> None:
        super().close()
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def make_alfworld_env(engine: str = "fast", **kwargs) -> AlfWorldEnv:
    factories: dict[str, Callable[..., AlfWorldEnv]] = {
        "fast": FastAlfWorldEnv, "real": RealAlfWorldEnv}
    if engine not in factories:
        raise ValueError(f"engine must be one of {tuple(factories)}, got {engine!r}")
    return factories[engine](**kwargs)
