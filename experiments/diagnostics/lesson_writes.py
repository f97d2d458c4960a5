"""What a households run's extractor wrote in RL, against what each
episode's trajectory shows: every consolidation reply its last checkpoint
keeps as a training sample (a reply that wrote at least one entry), judged
as lesson_reading.py judges the warm start's (right, invented where the
text shows no pick-up, wrong homes, other):

    python experiments/diagnostics/lesson_writes.py RUN_DIR [RUN_DIR ...] [--save] [--json_out=F]

--save writes each run's shares to RUN_DIR/lesson_writes.json, which is
committed with a figure run's record (the checkpoints it is read from are
not).

A reply that wrote nothing ("no lesson") is not kept, so the shares are of
the writing replies; the line also gives the episodes consolidated and the
replies that wrote.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections import Counter

import tyro

VERDICTS = ("right", "invented", "wrong homes", "other")


@dataclasses.dataclass(frozen=True)
class Command:
    runs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories (each with checkpoints/)."""
    json_out: str | None = None
    """Also write the report as JSON here."""
    save: bool = False
    """Also write each run's shares to RUN_DIR/lesson_writes.json."""


def writes_of(host_state: dict) -> dict:
    """Verdict shares of the consolidation samples in a run's host state."""
    from experiments.diagnostics.lesson_reading import verdict
    manager = host_state["manager"]
    samples = [s for s in manager["training_buffer"]["samples"] if s["kind"] == "consolidate"]
    counts = Counter(verdict(s["response"], s["prompt"]) for s in samples)
    n = max(1, len(samples))
    return {"episodes": manager["counters"].get("episodes", 0), "writing_replies": len(samples),
            **{k: counts[k] / n for k in VERDICTS}}


def main(argv=None) -> int:
    command = tyro.cli(Command, args=sys.argv[1:] if argv is None else argv, description=__doc__)
    from crl_jax.training.checkpointing import RunCheckpointer
    report = {}
    for run in command.runs:
        ckpt_dir = os.path.join(run, "checkpoints")
        if not os.path.isdir(ckpt_dir):
            print(f"error: {run} has no checkpoints/", file=sys.stderr)
            return 2
        with RunCheckpointer(ckpt_dir, async_save=False) as ckpt:
            restored = ckpt.restore()
        if "manager" not in restored.host_state:
            print(f"error: {run} has no experience manager (experience.mode=none or oracle)",
                  file=sys.stderr)
            return 2
        report[run] = out = {"step": restored.step, **writes_of(restored.host_state)}
        if command.save:
            with open(os.path.join(run, "lesson_writes.json"), "w") as f:
                json.dump(out, f, indent=2)
        print(f"{os.path.basename(run.rstrip('/'))} (step {restored.step}): {out['episodes']} "
              f"episodes, {out['writing_replies']} replies wrote: "
              + ", ".join(f"{k} {out[k]:.2f}" for k in VERDICTS))
    if command.json_out:
        with open(command.json_out, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
