"""The real ALFWorld engine in its own process.

Fast Downward's libdownward.so and usearch's extension (which carries a
static libstdc++) cannot share a process: once usearch is imported, loading
a game fails inside libdownward ("Failed to match magic word 'end_version'")
and the C++ code exits the whole process with status 33. The trainer always
imports usearch (the experience bank), so the real engine runs in a spawned
worker process and this proxy forwards reset/step/facts to it. One worker
serves one environment (one game at a time); it is cheap next to the
engine's own ~1.5 s resets.
"""
from __future__ import annotations

import collections
import multiprocessing as mp

from crl_jax.envs.alfworld_data import GameRecord

_TIMEOUT_S = 300.0


def _serve(conn) -> None:
    from crl_jax.envs.alfworld_real import RealAlfredEngine
    engine = None
    while True:
        try:
            op, arg = conn.recv()
        except EOFError:
            return
        try:
            if op == "load":
                if engine is not None:
                    engine.close()
                engine = RealAlfredEngine(arg)
                out = None
            elif op == "reset":
                out = (engine.reset(), dict(engine.facts))
            elif op == "step":
                out = (engine.step(arg), dict(engine.facts))
            elif op == "close":
                if engine is not None:
                    engine.close()
                conn.send(("ok", None))
                return
            else:
                raise ValueError(f"unknown op {op!r}")
            conn.send(("ok", out))
        except BaseException as err:  # sent back and raised in the caller
            conn.send(("error", repr(err)))


class RealEngineWorker:
    """A spawned process hosting RealAlfredEngine instances, one at a time."""

    def __init__(self):
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True,
                                 name="crl-alfworld-real")
        self._proc.start()
        child.close()

    def call(self, op: str, arg=None):
        if not self._proc.is_alive():
            raise RuntimeError(f"the real ALFWorld worker died (exit code {self._proc.exitcode})")
        self._conn.send((op, arg))
        if not self._conn.poll(_TIMEOUT_S):
            self._proc.kill()
            raise TimeoutError(f"the real ALFWorld worker did not answer {op!r} in {_TIMEOUT_S} s")
        status, out = self._conn.recv()
        if status == "error":
            raise RuntimeError(f"real ALFWorld engine failed on {op!r}: {out}")
        return out

    def close(self) -> None:
        if self._proc.is_alive():
            try:
                self.call("close")
            except (RuntimeError, TimeoutError, OSError):
                pass
            self._proc.join(timeout=10)
            if self._proc.is_alive():
                self._proc.kill()


class IsolatedRealAlfredEngine:
    """RealAlfredEngine's interface, run by a RealEngineWorker."""

    def __init__(self, record: GameRecord, worker: RealEngineWorker):
        self.record, self._worker = record, worker
        worker.call("load", record)
        self.facts: dict = {}

    def reset(self):
        out, facts = self._worker.call("reset")
        self.facts = collections.defaultdict(set, facts)  # same type as the in-process engine's
        return out

    def step(self, command: object):
        out, facts = self._worker.call("step", command if isinstance(command, str) else "")
        self.facts = collections.defaultdict(set, facts)
        return out

    def close(self) -> None:
        pass  # the worker outlives games; RealAlfWorldEnv.close() stops it
