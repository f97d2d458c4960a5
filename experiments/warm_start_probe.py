"""What the warm-start diagnostics share (actor_step_accuracy.py,
extractor_quality.py): their common flags, the run built as
experiments/run.py would build it (warm start included; set
warm_start.cache_dir to reuse one), its shutdown, and the JSON report."""
from __future__ import annotations

import contextlib
import json
import tempfile
from typing import Callable

from absl import app, flags

flags.DEFINE_string("config", "alfworld_cpu", "preset name (a module in experiments/configs/)")
flags.DEFINE_integer("games", 48, "held-out tasks the expert plays (per environment)")
flags.DEFINE_string("json_out", None, "also write the report as JSON here")
FLAGS = flags.FLAGS


@contextlib.contextmanager
def built_run(argv, prefix: str, check: Callable | None = None):
    """Yields a built run (crl_jax.training.components.Run) for --config plus the command line's key=value
    overrides; ``check(cfg)`` may raise app.UsageError for unusable settings."""
    from crl_jax.training.config_io import apply_overrides, load_preset
    from crl_jax.training.components import build_run

    bad = [a for a in argv[1:] if "=" not in a]
    if bad:
        raise app.UsageError(f"overrides must look like key.sub=value; got {bad}")
    if FLAGS.games < 1:
        raise app.UsageError("--games must be >= 1")
    cfg = apply_overrides(load_preset(FLAGS.config), argv[1:])
    if check is not None:
        check(cfg)
    run = build_run(cfg, tempfile.mkdtemp(prefix=prefix))
    try:
        yield run
    finally:
        run.close()


def write_report(report: dict) -> None:
    if FLAGS.json_out:
        with open(FLAGS.json_out, "w") as f:
            json.dump(report, f, indent=2)
