"""Where a run's log lines go: everything to <run_dir>/log.txt; to the
console only this project's own messages and other libraries' warnings and
errors, printed above the progress bars (Orbax logs ~55 INFO lines a
checkpoint save, which would bury them)."""
from __future__ import annotations

import logging
import os
import sys

import jax
from tqdm.auto import tqdm

LOG_FILENAME = "log.txt"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Loggers whose warnings are expected and say nothing to a user: JAX's probe
# for a TPU or GPU backend on a machine that has neither (kept in log.txt).
QUIET_ON_CONSOLE = ("jax._src.xla_bridge",)


def progress_bar(total: int, desc: str, unit: str, *, initial: int = 0,
                 transient: bool = True) -> tqdm:
    """A progress bar with a rate and an ETA. On a terminal it redraws in
    place; into a file (a sweep's run.log, CI) it writes a line at most every
    30 s, so logs stay readable. ``transient``: gone once done (phases); the
    RL bar stays."""
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=not transient,
                dynamic_ncols=True, mininterval=0.5 if tty else 30.0,
                disable=jax.process_index() != 0)  # several processes: the console is process 0's


class _TqdmHandler(logging.Handler):
    """Writes a record above the progress bars instead of through them."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record))
        except Exception:  # a logging failure must not end the run
            self.handleError(record)


class _ConsoleFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(QUIET_ON_CONSOLE):
            return record.levelno >= logging.ERROR
        if record.name.split(".")[0] == "crl_jax":
            return record.levelno >= logging.INFO
        return record.levelno >= logging.WARNING


def log_filename(process: int) -> str:
    """log.txt for process 0; log.p<k>.txt for the others of a multi-process run."""
    return LOG_FILENAME if process == 0 else f"log.p{process}.txt"


def setup_logging(run_dir: str) -> str:
    """Routes logging for a run; returns the path of the full log. With
    several processes, only process 0 writes to the console (warnings and
    errors of the others too); each keeps its own full log."""
    import absl.logging

    os.makedirs(run_dir, exist_ok=True)
    process = jax.process_index()
    path = os.path.join(run_dir, log_filename(process))
    root = logging.getLogger()
    for handler in list(root.handlers):  # absl's, or an earlier run's in this process
        root.removeHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("crl_jax").setLevel(logging.DEBUG)
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(logging.Formatter(FORMAT))
    if process:  # no bars to write around; its stdout may be closed (run.py --cpu_processes)
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter(f"[process {process}] %(levelname)s %(name)s: "
                                               "%(message)s"))
        console.setLevel(logging.WARNING)
    else:
        console = _TqdmHandler()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(_ConsoleFilter())
    root.addHandler(to_file)
    root.addHandler(console)
    # absl (Orbax logs through it) goes through the root logger's handlers.
    absl.logging.set_verbosity(absl.logging.INFO)
    return path
