"""Whether a run's extractor RL ever ran, read from committed records alone:
for every Comp. RL run of a preset under the figure runs' root, the most
rewarded samples its training buffer held (``extractor/buffer_ready``: the
samples whose entries a guided episode has read and scored) against the
batch a CISPO update draws (``experience.bank.train_batch_size``), and how
many updates it logged (``extractor/updates``). Runs are grouped by how
often and how the bank merges (``experience.merge_every``, ``merger``),
which decides whether a written entry survives until it is read, whom a
merged entry credits (``experience.bank.merge_credit``), and by the batch.

    python experiments/diagnostics/extractor_buffer.py [--preset=alfworld_households_cpu] [--runs NAME ...]

One line per group; ``--runs`` also prints a line for each run named.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import sys

import tyro

from experiments.figures.common import read_rows

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "figures", "runs")


@dataclasses.dataclass(frozen=True)
class Command:
    preset: str = "alfworld_households_cpu"
    """The preset whose Comp. RL runs are read."""
    root: str = ROOT
    """The directory that holds the runs."""
    runs: tuple[str, ...] = ()
    """Run names to print one by one as well."""


@dataclasses.dataclass(frozen=True)
class BufferRecord:
    name: str
    merge_every: int
    merger: str
    merge_credit: str
    batch: int
    most_ready: int  # the most rewarded samples the buffer held at any logged step
    updates: int


def buffer_records(root: str, preset: str) -> list[BufferRecord]:
    """Every Comp. RL run of ``preset`` under ``root`` with metrics, by name."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, f"{preset}-s*", "config.json"))):
        with open(path) as f:
            experience = json.load(f)["experience"]
        metrics = os.path.join(os.path.dirname(path), "metrics.jsonl")
        if experience["mode"] != "comp_rl" or not os.path.exists(metrics):
            continue
        rows = read_rows(metrics)
        out.append(BufferRecord(
            os.path.basename(os.path.dirname(path)), int(experience["merge_every"]),
            experience["merger"], experience["bank"].get("merge_credit", "none"),  # none before it
            int(experience["bank"]["train_batch_size"]),
            max((int(r.get("extractor/buffer_ready", 0)) for r in rows), default=0),
            sum(int(r.get("extractor/updates", 0)) for r in rows)))
    return out


def group_lines(records: list[BufferRecord]) -> list[str]:
    """A line per (merge_every, merger, merge_credit, batch): its runs, the
    most rewarded samples any of them held, and how many made an update."""
    groups: dict[tuple[int, str, str, int], list[BufferRecord]] = {}
    for r in records:
        groups.setdefault((r.merge_every, r.merger, r.merge_credit, r.batch), []).append(r)
    return [f"merge_every={every} merger={merger} merge_credit={credit} batch={batch}: "
            f"{len(rs)} runs, at most {max(r.most_ready for r in rs)} rewarded samples held, "
            f"{sum(r.updates > 0 for r in rs)} updated"
            for (every, merger, credit, batch), rs in sorted(groups.items())]


def main(argv=None) -> int:
    command = tyro.cli(Command, args=sys.argv[1:] if argv is None else argv, description=__doc__)
    records = buffer_records(command.root, command.preset)
    if not records:
        print(f"no Comp. RL run of {command.preset} with metrics under {command.root}")
        return 1
    print("\n".join(group_lines(records)))
    named = {r.name: r for r in records}
    for name in command.runs:
        r = named.get(name)
        print(f"{name}: not a Comp. RL run with metrics here" if r is None else
              f"{name}: merge_every={r.merge_every} batch={r.batch} at most {r.most_ready} "
              f"rewarded samples held, {r.updates} updates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
