"""Run metrics: a crash-safe JSONL log and TensorBoard event files; phase timings.

TensorBoard files are written by tensorboardX (no TensorFlow needed).
Phase timings: `PhaseTimings` / `Timer`. Console progress is tqdm's, in the
loop itself.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Mapping, MutableMapping

import numpy as np
from tensorboardX import SummaryWriter

METRICS_FILENAME = "metrics.jsonl"
_RESERVED_KEYS = ("step", "time")

# --------------------------------------------------------------------------- #
# JSONL + TensorBoard
# --------------------------------------------------------------------------- #


def _to_number(key: str, value: Any) -> float | int | bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    array = np.asarray(value)  # also takes 0-d jax arrays (device -> host)
    if array.size != 1 or array.dtype.kind not in "biuf":
        raise ValueError(
            f"Metric {key!r} must be a numeric scalar, got {type(value).__name__} "
            f"with shape {array.shape} and dtype {array.dtype}"
        )
    item = array.reshape(()).item()
    return item


def read_metrics(path: str) -> list[dict[str, Any]]:
    """All complete lines of a metrics.jsonl file (a torn last line is skipped)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                rows.append(json.loads(line))
    return rows


class MetricsWriter:
    """One JSON line per step in out_dir/metrics.jsonl, plus TensorBoard files.

    Each line is flushed and fsynced, so a crash loses at most the line being
    written (a torn last line is removed when the writer is opened).
    ``purge_after=S`` (a run resumed from step S): lines of later steps, which
    the run will redo, are dropped, and TensorBoard is told to forget them.
    """

    def __init__(self, out_dir: str, use_tensorboard: bool = True, purge_after: int | None = None):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        self.path = os.path.join(out_dir, METRICS_FILENAME)
        self._lock = threading.Lock()
        self._drop_torn_last_line()
        if purge_after is not None:
            self._drop_after(purge_after)
        self._file = open(self.path, "a", encoding="utf-8")
        # purge_step: TensorBoard hides events at or after it from older files.
        # The suffix keeps two writers opened within one second (a quick
        # resume) from sharing, and so overwriting, one file name.
        self._events = (SummaryWriter(out_dir, flush_secs=10, filename_suffix=f".{time.time_ns()}",
                                      purge_step=None if purge_after is None else purge_after + 1)
                        if use_tensorboard else None)

    def _drop_torn_last_line(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
                os.fsync(f.fileno())

    def _drop_after(self, step: int) -> int:
        """Drops lines with step > `step`; returns how many were dropped."""
        if not os.path.exists(self.path):
            return 0
        rows = read_metrics(self.path)
        kept = [json.dumps(r) + "\n" for r in rows if r["step"] <= step]
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(kept)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        return len(rows) - len(kept)

    def write(self, step: int, scalars: Mapping[str, Any]) -> None:
        clash = [k for k in _RESERVED_KEYS if k in scalars]
        if clash:
            raise ValueError(f"Metric names {clash} are reserved for the line's own fields")
        values = {str(k): _to_number(str(k), v) for k, v in scalars.items()}
        row = {"step": int(step), "time": time.time(), **values}
        line = json.dumps(row) + "\n"  # non-finite values become NaN/Infinity
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
            if self._events is not None:
                for k, v in values.items():
                    self._events.add_scalar(k, float(v), int(step), walltime=row["time"])
                self._events.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()
            if self._events is not None:
                self._events.close()

    def __enter__(self) -> "MetricsWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --------------------------------------------------------------------------- #
# Phase timings
# --------------------------------------------------------------------------- #


class Timer:
    """`with Timer("rollout", totals):` adds the block's seconds to totals["rollout"].

    The time is recorded even if the block raises. JAX dispatches work
    asynchronously: call `.block_until_ready()` inside the block on its
    outputs, or the timing measures only the dispatch.
    """

    def __init__(
        self,
        name: str,
        totals: MutableMapping[str, float] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        lock: threading.Lock | None = None,
    ):
        self.name, self.totals, self._clock, self._lock = name, totals, clock, lock
        self.elapsed = 0.0

    def __enter__(self) -> "Timer":
        self._start = self._clock()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.elapsed = self._clock() - self._start
        if self.totals is not None:
            if self._lock is not None:
                with self._lock:
                    self.totals[self.name] = self.totals.get(self.name, 0.0) + self.elapsed
            else:
                self.totals[self.name] = self.totals.get(self.name, 0.0) + self.elapsed


# Metric names that measure the wall clock (they differ between two runs of
# one seed; everything else a synchronous run logs repeats exactly): the
# step's time, the phase totals under time/, and latencies and rates.
CLOCK_SUFFIXES = ("_s_per_query", "_s_per_entry", "_per_s")


def is_clock_metric(key: str) -> bool:
    """Whether ``key`` measures the wall clock (see CLOCK_SUFFIXES)."""
    return key == "time" or key.startswith("time/") or key.endswith(CLOCK_SUFFIXES)


class PhaseTimings:
    """Thread-safe per-phase second totals, read and reset once per logged step."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._totals: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def time(self, name: str) -> Timer:
        return Timer(name, self._totals, clock=self._clock, lock=self._lock)

    def snapshot(self, prefix: str = "time/") -> dict[str, float]:
        with self._lock:
            return {prefix + k: v for k, v in self._totals.items()}

    def pop_all(self, prefix: str = "time/") -> dict[str, float]:
        """Totals since the last pop (prefixed for logging), then resets them."""
        with self._lock:
            out = {prefix + k: v for k, v in self._totals.items()}
            self._totals.clear()
            return out
