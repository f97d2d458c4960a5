"""Run metrics: a crash-safe JSONL log, TensorBoard event files, console progress.

TensorBoard files come from crl_jax.event_files (written by hand, no
TensorFlow). Phase timings: `PhaseTimings` / `Timer`.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from typing import Any, Callable, Mapping, MutableMapping, Sequence, TextIO

import numpy as np

from crl_jax.event_files import EventFileWriter, iter_event_records  # noqa: F401 (re-export)

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
    written (a torn last line is removed when the writer is next opened).
    After `--resume` from step S call `truncate_after(S)`: lines of steps the
    resumed run will redo are dropped, and TensorBoard is told to forget them.
    """

    def __init__(self, out_dir: str, use_tensorboard: bool = True):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        self.path = os.path.join(out_dir, METRICS_FILENAME)
        self._lock = threading.Lock()
        self._drop_torn_last_line()
        self._file = open(self.path, "a", encoding="utf-8")
        self._events = EventFileWriter(out_dir) if use_tensorboard else None
        self._events_fresh = True  # nothing but the header in the current event file

    def _drop_torn_last_line(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
                os.fsync(f.fileno())

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
                self._events.add_scalars(int(step), {k: float(v) for k, v in values.items()})
                self._events_fresh = False

    def truncate_after(self, step: int) -> int:
        """Drops lines with step > `step`; returns how many were dropped."""
        with self._lock:
            self._file.close()
            kept, dropped = [], 0
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    if not line.endswith("\n"):
                        continue
                    if json.loads(line)["step"] > step:
                        dropped += 1
                    else:
                        kept.append(line)
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(kept)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            self._file = open(self.path, "a", encoding="utf-8")
            if self._events is not None:
                # Event files are append-only; a new file starting with a
                # session START at step+1 makes TensorBoard purge the redone steps.
                if not self._events_fresh:
                    self._events.close()
                    self._events = EventFileWriter(self.out_dir)
                self._events.add_session_start(step + 1)
            return dropped

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
# Console progress and phase timings
# --------------------------------------------------------------------------- #


def _format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class ProgressBar:
    """Console progress: steps done/total, rate, ETA and a few chosen metrics.

    On a terminal the line is redrawn in place (at most every
    `min_interval_s`, default 0.2 s); otherwise (logs, CI) a full line is
    printed at most every `min_interval_s` (default 30 s) and at the end.
    The rate counts only steps done by this process, so a resumed run's ETA
    is honest.
    """

    def __init__(
        self,
        total: int,
        *,
        initial: int = 0,
        keys: Sequence[str] = (),
        stream: TextIO | None = None,
        min_interval_s: float | None = None,
        is_tty: bool | None = None,
        width: int = 24,
        clock: Callable[[], float] = time.monotonic,
    ):
        if total <= 0:
            raise ValueError(f"ProgressBar total must be positive, got {total}")
        self.total, self.initial, self.keys, self.width = total, initial, tuple(keys), width
        self.stream = stream if stream is not None else sys.stdout
        if is_tty is None:
            is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.is_tty = is_tty
        self.min_interval_s = min_interval_s if min_interval_s is not None else (0.2 if is_tty else 30.0)
        self._clock = clock
        self._start = clock()
        self._last_print: float | None = None
        self.step = initial
        self.metrics: dict[str, Any] = {}

    def render(self) -> str:
        done = min(self.step, self.total)
        fraction = done / self.total
        filled = int(round(fraction * self.width))
        elapsed = self._clock() - self._start
        rate = (self.step - self.initial) / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else math.inf
        parts = [
            f"[{'#' * filled}{'-' * (self.width - filled)}]",
            f"{done}/{self.total}",
            f"{100 * fraction:5.1f}%",
            f"{rate:.3g} step/s",
            f"ETA {_format_duration(eta)}",
        ]
        parts += [f"{k}={_format_value(self.metrics[k])}" for k in self.keys if k in self.metrics]
        return "  ".join(parts)

    def update(self, step: int, metrics: Mapping[str, Any] | None = None) -> None:
        """Records that `step` steps are done (absolute count) and maybe prints."""
        self.step = step
        if metrics:
            self.metrics.update(metrics)
        now = self._clock()
        finished = step >= self.total
        due = self._last_print is None or now - self._last_print >= self.min_interval_s
        if due or finished:
            self._print()
            self._last_print = now

    def _print(self) -> None:
        if self.is_tty:
            self.stream.write("\r\x1b[K" + self.render())
        else:
            self.stream.write(self.render() + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Prints the final state (and ends the terminal line)."""
        self._print()
        if self.is_tty:
            self.stream.write("\n")
            self.stream.flush()


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
