"""Where figure runs and outputs live, and the rule that a figure is only
replaced by a drawing that has every run the committed one had.

Runs of the full budget live in ``experiments/figures/runs/``, and each run's
record (metrics.jsonl, config.json, warm_start.json, ``<run>.arm.json`` and,
where experiments/diagnostics/extractor_rl_gain.py measured it, extractor_rl_gain.json)
is committed, while checkpoints, tokenizers, logs and the warm-start cache
are not (.gitignore): binaries stay out of the repository, so a fresh
machine remakes a warm start once and the sweep shares it. A fresh clone
can redraw every figure without rerunning anything, and the sweep skips
the runs that finished. The quick budget is a check of the machinery: its
runs, figures and results document go under ``runs/quick/``, never over the
committed ones.

A figure is drawn into a draft folder first. It replaces the committed
``out/<name>.png`` and ``.json`` only if it drew every run that the committed
one drew (the JSON's ``runs_drawn``). Otherwise the committed files and their
section of the results document are kept, and the report says why. This way
a machine that lacks some runs (a fresh clone before records were committed,
a run set aside as stale) cannot silently replace a figure with a poorer one.
``--redraw`` replaces it anyway.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile

from experiments.figures import common

FULL_ROOT = common.DEFAULT_ROOT
QUICK_DIR = os.path.join(common.REPO, "runs", "quick")
PAPER_DIR = os.path.join(common.REPO, "runs", "paper")  # local, like the quick budget's
RUNS_DRAWN = "runs_drawn"
UNRECORDED = "unrecorded"  # a committed figure from before RUNS_DRAWN existed


def default_places(budget: str) -> dict[str, str]:
    """Default run root, figure folder and results document of a budget."""
    if common.check_budget(budget) in ("quick", "paper"):
        place = QUICK_DIR if budget == "quick" else PAPER_DIR
        return {"root": os.path.join(place, "runs"), "out": os.path.join(place, "out"),
                "results": os.path.join(place, "RESULTS.md")}
    return {"root": FULL_ROOT, "out": common.DEFAULT_OUT,
            "results": os.path.join(common.REPO, "docs", "RESULTS.md")}


def place(budget: str, given: str, what: str) -> str:
    """``given`` when set, else the budget's default ``what`` (root, out or results)."""
    return given or default_places(budget)[what]


def committed_runs(out_dir: str, name: str) -> list[str] | str | None:
    """Run names the committed figure ``name`` drew; None when there is no
    committed figure; UNRECORDED for one that does not record them."""
    path = os.path.join(out_dir, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return list(data[RUNS_DRAWN]) if RUNS_DRAWN in data else UNRECORDED


def keep_reason(report: dict, out_dir: str) -> str | None:
    """Why the committed figure must stay instead of this new drawing, or
    None when the drawing may replace it."""
    return _reason(committed_runs(out_dir, report["name"]), report["drawn"])


def _reason(before, drawn) -> str | None:
    """keep_reason, given what committed_runs said."""
    if before == UNRECORDED:
        return "the committed figure does not record which runs it drew"
    if before is None:
        return None
    lost = sorted(set(before) - set(drawn))
    if not lost:
        return None
    shown = ", ".join(lost[:4]) + (f" and {len(lost) - 4} more" if len(lost) > 4 else "")
    return (f"{len(lost)} of the {len(before)} runs it drew have no usable record here "
            f"({shown})")


def kept_report(report: dict, out_dir: str, reason: str) -> dict:
    """The record of a figure left as committed: its files and its previous
    section of the results document (results_doc copies it), no new numbers."""
    return {"name": report["name"], "title": report["title"], "kept": reason,
            "png": os.path.join(out_dir, report["name"] + ".png"),
            "json": os.path.join(out_dir, report["name"] + ".json"),
            "tables": [], "notes": [], "ratios": {}, "seeds": [], "runs": [], "drawn": []}


def publish(reports: list[dict], out_dir: str, redraw=False, log=print,
            empty_new: bool = True) -> list[dict]:
    """Moves each drafted figure (its report's png and json) into ``out_dir``
    with the runs it drew recorded in the JSON, unless the committed figure
    must stay (keep_reason; ``redraw`` overrides: True for every figure, or a
    collection of figure names, e.g. the ones whose runs were all made
    again). ``empty_new=False`` leaves out a new figure with no run (the
    committed document waits for its first). Returns the reports as
    published: moved ones point into ``out_dir``, kept ones are kept_report."""
    os.makedirs(out_dir, exist_ok=True)
    out = []
    for rep in reports:
        if not (empty_new or rep["drawn"]) and committed_runs(out_dir, rep["name"]) is None:
            if log:  # an empty figure says nothing: it waits for its first run
                log(f"{rep['name']}: no run to draw yet; not published")
            continue
        forced = redraw is True or (not isinstance(redraw, bool) and rep["name"] in redraw)
        reason = None if forced else keep_reason(rep, out_dir)
        if reason:
            if log:
                log(f"{rep['name']}: kept the committed figure: {reason}; rerun those runs, "
                    f"or pass --redraw to replace it with what is here")
            out.append(kept_report(rep, out_dir, reason))
            continue
        with open(rep["json"], encoding="utf-8") as f:
            data = json.load(f)
        data[RUNS_DRAWN] = sorted(rep["drawn"])
        png, js = (os.path.join(out_dir, rep["name"] + ext) for ext in (".png", ".json"))
        shutil.move(rep["png"], png)
        common.save_json(js, data)
        out.append(dict(rep, png=png, json=js))
    return out


def draft_dir(out_dir: str) -> str:
    """A fresh folder beside ``out_dir`` to draw into (same file system, so
    the move into ``out_dir`` is a rename)."""
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=".draft-", dir=parent)


def draw_and_publish(make, out_dir: str, redraw=False, log=print,
                     empty_new: bool = True) -> list[dict]:
    """``make(draft_dir) -> reports`` draws every figure into a draft folder;
    then each is published into ``out_dir`` or left as committed (publish).
    The draft folder is removed whatever happens."""
    draft = draft_dir(out_dir)
    try:
        return publish(make(draft), out_dir, redraw, log, empty_new)
    finally:
        shutil.rmtree(draft, ignore_errors=True)


def status_lines(reports: list[dict], out_dir: str) -> list[str]:
    """One line per drafted figure: how many runs it draws here, how many the
    committed one drew, and whether publishing would replace or keep it."""
    lines = []
    for rep in reports:
        before = committed_runs(out_dir, rep["name"])  # read once for both uses
        reason = _reason(before, rep["drawn"])
        was = ("no committed figure" if before is None else
               "the committed one does not record its runs" if before == UNRECORDED else
               f"the committed one drew {len(before)}")
        verdict = f"would be kept: {reason}" if reason else "would be redrawn"
        lines.append(f"{rep['name']}: draws {len(rep['drawn'])} run(s) here, {was}; {verdict}")
    return lines


def run_states(arms, root: str) -> list[str]:
    """Where each arm's run stands in ``root``: counts of finished, unfinished
    (named, with their step) and not run."""
    finished, unfinished, absent = 0, [], 0
    for arm in arms:
        done = common.last_step(common.run_dir(arm, root))
        if done is None:
            absent += 1
            continue
        expected = common.expected_steps(arm)  # loads the preset: once per arm
        if done >= expected:
            finished += 1
        else:
            unfinished.append(f"{arm.run_name} ({arm.label}, step {done} of {expected})")
    return ([f"{len(arms)} runs in {common.shown_path(root)}: {finished} finished, "
             f"{len(unfinished)} unfinished, {absent} not run"]
            + [f"  unfinished: {u}" for u in unfinished])
