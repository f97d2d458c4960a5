"""A committed figure is only replaced by a drawing with every run it drew;
kept figures keep their section of the results document; full-budget run
records are committed and their heavy files are not."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from experiments.figures import common, fig6_success, publish, reproduce, results_doc
from tests.figures.test_figures import fake_rows, write_rows

REPO = common.REPO


def draft_report(tmp_path, name: str, drawn: list[str], value: float) -> dict:
    """A drafted figure as a figure script leaves it: png + json + report."""
    draft = tmp_path / "draft"
    draft.mkdir(exist_ok=True)
    (draft / f"{name}.png").write_bytes(b"png of " + str(value).encode())
    (draft / f"{name}.json").write_text(json.dumps({"kind": "bars", "value": value}))
    return {"name": name, "title": f"Title of {name}", "png": str(draft / f"{name}.png"),
            "json": str(draft / f"{name}.json"), "tables": [], "notes": [], "ratios": {},
            "seeds": [0], "runs": [], "drawn": drawn}


def test_a_new_figure_is_published_with_the_runs_it_drew(tmp_path):
    out = tmp_path / "out"
    reps = publish.publish([draft_report(tmp_path, "fig", ["b", "a"], 1.0)], str(out), log=None)
    data = json.loads((out / "fig.json").read_text())
    assert data == {"kind": "bars", "value": 1.0, "runs_drawn": ["a", "b"]}
    assert (out / "fig.png").read_bytes() == b"png of 1.0"
    assert reps[0]["png"] == str(out / "fig.png") and not reps[0].get("kept")


def test_a_new_figure_without_runs_waits_when_asked(tmp_path):
    out = tmp_path / "out"
    reps = publish.publish([draft_report(tmp_path, "empty", [], 0.0),
                            draft_report(tmp_path, "fig", ["a"], 1.0)], str(out), log=None,
                           empty_new=False)
    assert [r["name"] for r in reps] == ["fig"]
    assert sorted(os.listdir(out)) == ["fig.json", "fig.png"]
    reps = publish.publish([draft_report(tmp_path, "empty", [], 0.0)], str(out), log=None)
    assert [r["name"] for r in reps] == ["empty"]  # the default draws it: a document stays whole


def test_a_drawing_missing_a_committed_run_keeps_the_committed_figure(tmp_path):
    out, said = tmp_path / "out", []
    publish.publish([draft_report(tmp_path, "fig", ["a", "b"], 1.0)], str(out), log=None)
    reps = publish.publish([draft_report(tmp_path, "fig", ["a", "c"], 2.0)], str(out),
                           log=said.append)
    assert json.loads((out / "fig.json").read_text())["value"] == 1.0  # untouched
    assert (out / "fig.png").read_bytes() == b"png of 1.0"
    assert reps[0]["kept"] == "1 of the 2 runs it drew have no usable record here (b)"
    assert "--redraw" in said[0] and reps[0]["tables"] == [] and reps[0]["drawn"] == []
    # a drawing with every committed run (and more) replaces it
    publish.publish([draft_report(tmp_path, "fig", ["a", "b", "c"], 3.0)], str(out), log=None)
    assert json.loads((out / "fig.json").read_text())["runs_drawn"] == ["a", "b", "c"]
    # --redraw_figures names others: this one is still kept
    publish.publish([draft_report(tmp_path, "fig", [], 3.5)], str(out),
                    redraw=frozenset({"other"}), log=None)
    assert json.loads((out / "fig.json").read_text())["value"] == 3.0
    # naming it, or --redraw, replaces it whatever is missing
    publish.publish([draft_report(tmp_path, "fig", ["d"], 3.7)], str(out),
                    redraw=frozenset({"fig"}), log=None)
    assert json.loads((out / "fig.json").read_text())["runs_drawn"] == ["d"]
    publish.publish([draft_report(tmp_path, "fig", [], 4.0)], str(out), redraw=True, log=None)
    assert json.loads((out / "fig.json").read_text()) == {"kind": "bars", "value": 4.0,
                                                         "runs_drawn": []}


def test_a_committed_figure_that_does_not_record_its_runs_is_kept(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "fig.json").write_text(json.dumps({"kind": "bars"}))
    reps = publish.publish([draft_report(tmp_path, "fig", ["a"], 1.0)], str(out), log=None)
    assert "does not record which runs" in reps[0]["kept"]
    assert json.loads((out / "fig.json").read_text()) == {"kind": "bars"}


def test_draw_and_publish_removes_its_draft_even_when_drawing_fails(tmp_path):
    out = tmp_path / "out"

    def boom(draft):
        assert os.path.isdir(draft) and os.path.dirname(draft) == str(tmp_path)
        raise KeyError("no data")

    with pytest.raises(KeyError):
        publish.draw_and_publish(boom, str(out), log=None)
    assert os.listdir(tmp_path) == []  # no draft left behind (out/ was never reached)


def test_budgets_have_their_own_places_and_quick_never_writes_the_committed_ones():
    quick, full = publish.default_places("quick"), publish.default_places("full")
    assert full == {"root": os.path.join(REPO, "experiments", "figures", "runs"),
                    "out": os.path.join(REPO, "experiments", "figures", "out"),
                    "results": os.path.join(REPO, "docs", "RESULTS.md")}
    assert all(v.startswith(os.path.join(REPO, "runs", "quick")) for v in quick.values())
    assert publish.place("quick", "/x", "root") == "/x"
    with pytest.raises(ValueError, match="budget"):
        publish.default_places("medium")


def test_kept_sections_are_copied_word_for_word_with_one_mark():
    previous = "\n".join(["# Results", "", "## Headline: Comp. RL against the GRPO baseline", "",
                          "| old headline |", "", "## Fig. 6: success over training", "",
                          "![fig6_success](../out/fig6_success.png)", "", "| old | table |", "",
                          "## Reading", "", "old reading", ""])
    kept = {"name": "fig6_success", "title": "Fig. 6: success over training", "kept": "why",
            "png": "/o/fig6_success.png", "tables": [], "notes": [], "ratios": {}, "seeds": [],
            "runs": [], "drawn": []}
    text = results_doc.render([kept], "full", "cmd", 60.0, 0.0, "/d", previous)
    section = text.split("## Fig. 6: success over training")[1].split("## Reading")[0]
    assert "| old | table |" in section and section.count("*Kept from the previous") == 1
    assert "| old headline |" in text.split("## Headline")[1].split("## Fig. 6")[0]
    assert "- Fig. 6: success over training: why" in text.split("## Headline")[0]
    assert text.rstrip().endswith(results_doc.reading_section("/d")[-2]) and "old reading" not in text
    # kept again: still one mark, same body
    again = results_doc.render([kept], "full", "cmd", 60.0, 0.0, "/d", text)
    assert again.split("## Headline")[1] == text.split("## Headline")[1]


def test_reproduce_keeps_figures_whose_runs_are_gone_and_redraw_replaces_them(tmp_path):
    root, out = tmp_path / "runs", tmp_path / "out"
    results = tmp_path / "docs" / "RESULTS.md"
    arms = reproduce.collect_arms([fig6_success], "quick")
    for arm in arms:
        write_rows(common.run_dir(arm, str(root)), fake_rows(arm))
    cmd = [sys.executable, os.path.join(REPO, "experiments", "figures", "reproduce.py"),
           "--budget=quick", "--only=fig6", "--skip_runs", f"--root={root}", f"--out={out}",
           f"--results={results}"]
    first = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr[-3000:]
    drawn = json.loads((out / "fig6_success.json").read_text())["runs_drawn"]
    assert sorted(drawn) == sorted(a.run_name for a in arms)
    # --only chooses whose arms run; every figure is drawn, so the document stays whole
    assert "## Fig. 9d: task scaling" in results.read_text() and (out / "sdae.png").exists()
    before = results.read_text().split("## Fig. 6")[1].split("## Reading")[0]
    gone = arms[0]
    shutil.rmtree(common.run_dir(gone, str(root)))  # e.g. a fresh machine without that run
    second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"fig6_success: kept the committed figure: 1 of the {len(arms)}" in second.stdout
    assert json.loads((out / "fig6_success.json").read_text())["runs_drawn"] == drawn
    after = results.read_text().split("## Fig. 6")[1].split("## Reading")[0]
    assert after.replace("\n\n*Kept from the previous document: some of its runs have no record "
                         "on the machine that made this one (which: the list at the top).*",
                         "") == before
    third = subprocess.run(cmd + ["--redraw"], cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert third.returncode == 0, third.stderr[-3000:]
    assert gone.run_name not in json.loads((out / "fig6_success.json").read_text())["runs_drawn"]
    assert "Kept from the previous" not in results.read_text()


def test_full_run_records_are_committed_and_their_heavy_files_are_not():
    if not os.path.isdir(os.path.join(REPO, ".git")):
        pytest.skip("not a git checkout")
    run = "experiments/figures/runs/alfworld_cpu-s0-0123456789"
    paths = {f"{run}/metrics.jsonl": False, f"{run}/config.json": False,
             f"{run}/warm_start.json": False, f"{run}.arm.json": False,
             f"{run}/extractor_rl_gain.json": False,
             f"{run}/checkpoints/10/state": True, f"{run}/run.log": True,
             f"{run}/tokenizer/tokenizer.json": True,
             "experiments/figures/runs/warm_start_cache/k/actor.npz": True,
             f"{run}.stale-20261130-101010/metrics.jsonl": True,
             "runs/quick/runs/x/metrics.jsonl": True, "runs/quick/out/fig6_success.png": True}
    for path, ignored in paths.items():
        proc = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO)
        assert (proc.returncode == 0) == ignored, path


def test_status_names_unfinished_runs_and_what_publishing_would_do(tmp_path):
    root = str(tmp_path / "runs")
    done, half, absent = (common.Arm(f"arm {i}", "alfworld_cpu", ("train.steps=4",), seed=i)
                          for i in range(3))
    write_rows(common.run_dir(done, root), [{"step": s} for s in range(5)])
    write_rows(common.run_dir(half, root), [{"step": s} for s in range(3)])
    lines = publish.run_states([done, half, absent], root)
    assert lines[0].endswith("3 runs in " + root + ": 1 finished, 1 unfinished, 1 not run")
    assert lines[1] == f"  unfinished: {half.run_name} (arm 1, step 2 of 4)"
    out = tmp_path / "out"
    publish.publish([draft_report(tmp_path, "fig", ["a", "b"], 1.0)], str(out), log=None)
    said = publish.status_lines([draft_report(tmp_path, "fig", ["a"], 2.0),
                                 draft_report(tmp_path, "new", ["a"], 2.0)], str(out))
    assert said == ["fig: draws 1 run(s) here, the committed one drew 2; would be kept: 1 of "
                    "the 2 runs it drew have no usable record here (b)",
                    "new: draws 1 run(s) here, no committed figure; would be redrawn"]
    assert json.loads((out / "fig.json").read_text())["value"] == 1.0  # status writes nothing
    (out / "old.json").write_text(json.dumps({"kind": "bars"}))  # predates runs_drawn
    assert publish.status_lines([draft_report(tmp_path, "old", ["a"], 2.0)], str(out)) == [
        "old: draws 1 run(s) here, the committed one does not record its runs; would be kept: "
        "the committed figure does not record which runs it drew"]


def test_documents_show_paths_inside_the_repository_relative_to_it():
    assert common.shown_path(os.path.join(REPO, "experiments", "figures", "runs", "r")) == \
        os.path.join("experiments", "figures", "runs", "r")
    assert common.shown_path("/elsewhere/runs/r") == "/elsewhere/runs/r"


def test_no_two_sections_of_the_results_share_a_heading():
    # One study drawn on two presets has one title; its second section names
    # its figure, so a heading links to one section and a kept section is found.
    reports = [{"title": "T", "name": "a"}, {"title": "U", "name": "b"},
               {"title": "T", "name": "c"}]
    assert results_doc.headings(reports) == ["T", "U", "T (c)"]
    text = open(os.path.join(REPO, "docs", "RESULTS.md"), encoding="utf-8").read()
    found = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(found) == len(set(found)), sorted(h for h in found if found.count(h) > 1)
