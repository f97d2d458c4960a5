"""A batched pool of text environments in worker processes.

    pool = EnvPool("MiniHack-Room-Ultimate-5x5-v0", num_envs=16, num_workers=2,
                   max_turns=30)
    obs, infos = pool.reset(seeds)            # one task/seed per slot
    results = pool.step(actions)              # None for slots already done
    pool.close()

Slot i lives in worker i % num_workers; each environment's episode depends
only on its own task seed and actions, so results equal a serial run and do
not depend on the number of workers. ``max_turns`` caps every episode: the
step that reaches it returns done=True with ``info.extra["truncated"]``.

Workers start with the 'spawn' context (safe with jax loaded in the parent).
The parent never waits forever: it polls each pipe and checks that the
worker is alive, raising WorkerError if one died, timed out, or raised.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import traceback
from typing import Sequence

from crl_jax.envs.base import StepInfo, StepResult


class WorkerError(RuntimeError):
    """A pool worker died, hung past the timeout, or raised an exception."""


def _worker(conn, env_name: str, env_kwargs: dict, slots: list[int],
            with_expert: bool) -> None:
    from crl_jax.envs import registry  # imported in the child, not pickled
    try:
        envs = {s: registry.make_env(env_name, **env_kwargs) for s in slots}
        experts = {s: registry.make_expert(env_name) for s in slots} if with_expert else {}
        conn.send(("ok", None))
    except Exception:  # noqa: BLE001  (report any start-up failure to the parent)
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            cmd, payload = conn.recv()
        except EOFError:
            break
        try:
            if cmd == "close":
                for env in envs.values():
                    env.close()
                conn.send(("ok", None))
                break
            if cmd == "reset":
                out = {}
                for slot, task in payload:
                    out[slot] = envs[slot].reset(task)
                    if slot in experts:
                        experts[slot].reset()
            elif cmd == "step":
                out = {slot: envs[slot].step(action) for slot, action in payload}
            elif cmd == "expert":
                out = {slot: experts[slot].act(envs[slot]) for slot in payload}
            else:
                raise ValueError(f"unknown pool command {cmd!r}")
            conn.send(("ok", out))
        except Exception:  # noqa: BLE001  (the parent re-raises it with context)
            conn.send(("error", traceback.format_exc()))


class EnvPool:
    """``num_envs`` environments of one kind spread over worker processes."""

    def __init__(self, env_name: str, num_envs: int, num_workers: int = 2,
                 env_kwargs: dict | None = None, max_turns: int | None = None,
                 with_expert: bool = False, timeout_s: float = 300.0,
                 start_method: str = "spawn"):
        if num_envs < 1 or num_workers < 1:
            raise ValueError(f"num_envs and num_workers must be >= 1, "
                             f"got {num_envs} and {num_workers}")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {max_turns}")
        if start_method not in ("spawn", "forkserver"):
            raise ValueError(f"start_method must be 'spawn' or 'forkserver' "
                             f"(fork is unsafe with jax), got {start_method!r}")
        self.env_name, self.num_envs = env_name, num_envs
        self.max_turns, self.timeout_s = max_turns, timeout_s
        num_workers = min(num_workers, num_envs)
        ctx = mp.get_context(start_method)
        self._owner = [i % num_workers for i in range(num_envs)]
        self._conns, self._procs = [], []
        for w in range(num_workers):
            parent, child = ctx.Pipe()
            slots = [i for i in range(num_envs) if self._owner[i] == w]
            proc = ctx.Process(target=_worker, daemon=True, args=(
                child, env_name, dict(env_kwargs or {}), slots, with_expert))
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        for w in range(num_workers):
            self._receive(w)
        self._turns = [0] * num_envs
        self._done = [True] * num_envs
        self._closed = False

    # -- protocol over slots --------------------------------------------
    def reset(self, tasks: Sequence) -> tuple[list[str], list[StepInfo]]:
        """Start a new episode in every slot; ``tasks[i]`` is slot i's task
        (seed or id; None = that environment's next task)."""
        self._check_len(tasks, "tasks")
        out = self._call("reset", list(enumerate(tasks)))
        self._turns = [0] * self.num_envs
        self._done = [False] * self.num_envs
        return [out[i][0] for i in range(self.num_envs)], \
            [out[i][1] for i in range(self.num_envs)]

    def step(self, actions: Sequence[str | None]) -> list[StepResult | None]:
        """Step every slot whose action is not None; finished slots must get
        None and get None back."""
        self._check_len(actions, "actions")
        work = []
        for i, action in enumerate(actions):
            if action is None:
                continue
            if self._done[i]:
                raise ValueError(f"slot {i} has finished its episode; pass None "
                                 f"for it or reset the pool")
            work.append((i, action))
        out = self._call("step", work)
        results: list[StepResult | None] = [None] * self.num_envs
        for i, res in out.items():
            self._turns[i] += 1
            if not res.done and self.max_turns is not None and \
                    self._turns[i] >= self.max_turns:
                info = dataclasses.replace(
                    res.info, extra={**res.info.extra, "truncated": True})
                res = dataclasses.replace(res, done=True, info=info)
            self._done[i] = res.done
            results[i] = res
        return results

    def expert_actions(self) -> list[str | None]:
        """The expert's next action for every running slot (pool built with
        ``with_expert=True``); None for finished slots."""
        live = [i for i in range(self.num_envs) if not self._done[i]]
        out = self._call("expert", live)
        return [out.get(i) for i in range(self.num_envs)]

    @property
    def done(self) -> list[bool]:
        return list(self._done)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w, conn in enumerate(self._conns):
            try:
                if self._procs[w].is_alive():
                    conn.send(("close", None))
                    self._receive(w, timeout_s=10.0)
            except (WorkerError, OSError, EOFError):
                pass
        for proc in self._procs:
            proc.join(timeout=5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5.0)
        for conn in self._conns:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if not getattr(self, "_closed", True):
            self.close()

    # -- plumbing ---------------------------------------------------------
    def _check_len(self, items, what):
        if self._closed:
            raise WorkerError("the pool is closed")
        if len(items) != self.num_envs:
            raise ValueError(f"need one entry of {what} per slot "
                             f"({self.num_envs}), got {len(items)}")

    def _call(self, cmd: str, work: list) -> dict:
        by_worker: dict[int, list] = {}
        for item in work:
            slot = item[0] if isinstance(item, tuple) else item
            by_worker.setdefault(self._owner[slot], []).append(item)
        for w, items in by_worker.items():
            try:
                self._conns[w].send((cmd, items))
            except (OSError, BrokenPipeError) as err:
                raise self._died(w, f"could not send {cmd!r}: {err}") from None
        out: dict = {}
        for w in by_worker:
            out.update(self._receive(w))
        return out

    def _receive(self, w: int, timeout_s: float | None = None):
        conn, proc = self._conns[w], self._procs[w]
        waited, limit = 0.0, self.timeout_s if timeout_s is None else timeout_s
        while not conn.poll(0.1):
            waited += 0.1
            if not proc.is_alive():
                if conn.poll(0):  # it answered just before exiting
                    break
                raise self._died(w, f"exited with code {proc.exitcode}")
            if waited >= limit:
                raise self._died(w, f"gave no answer within {limit:.0f} s")
        try:
            status, payload = conn.recv()
        except (EOFError, OSError) as err:
            raise self._died(w, f"closed its pipe ({err!r})") from None
        if status == "error":
            raise WorkerError(f"worker {w} of the {self.env_name!r} pool raised:\n{payload}")
        return payload

    def _died(self, w: int, what: str) -> WorkerError:
        self._closed = True
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
            proc.join(timeout=5.0)
        return WorkerError(f"worker {w} (pid {self._procs[w].pid}) of the "
                           f"{self.env_name!r} pool {what}; the pool is closed")
