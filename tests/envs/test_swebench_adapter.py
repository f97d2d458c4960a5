"""The SWE-bench harness adapter: record parsing, patch extraction from a real
git working copy, predictions, the official command line and report parsing
(everything but the Docker call, which needs a daemon)."""
import json
import os
import subprocess

import pytest

from crl_jax.envs.swe import swebench_adapter as sb
from crl_jax.envs.swe.local_tasks import write_repo

# -- SWE-bench adapter ---------------------------------------------------------
def _record(**over):
    rec = {"instance_id": "octo__widgets-101", "repo": "octo/widgets",
           "base_commit": "a" * 40, "problem_statement": "Widgets break.",
           "test_patch": "diff --git a/tests/test_w.py b/tests/test_w.py\n--- a/tests/test_w.py\n",
           "patch": "diff --git a/w.py b/w.py\n", "version": "1.0",
           "FAIL_TO_PASS": json.dumps(["tests/test_w.py::test_new"]),
           "PASS_TO_PASS": json.dumps(["tests/test_w.py::test_old", "tests/test_w.py::test_x"])}
    rec.update(over)
    return rec


def test_record_parsing_and_errors(tmp_path):
    rec = sb.parse_record(_record())
    assert rec.fail_to_pass == ("tests/test_w.py::test_new",) and len(rec.pass_to_pass) == 2
    assert rec.test_files == ("tests/test_w.py",) and rec.extra == {"version": "1.0"}
    assert sb.parse_record(_record(FAIL_TO_PASS=["t1"])).fail_to_pass == ("t1",)
    for bad, message in [({"FAIL_TO_PASS": "[not json"}, "not valid JSON"),
                         ({"PASS_TO_PASS": json.dumps({"a": 1})}, "list of strings"),
                         ({"base_commit": "HEAD"}, "not a git hash"),
                         ({"repo": "widgets"}, "owner/name"),
                         ({"patch": None}, "must be a string")]:
        with pytest.raises(ValueError, match=message):
            sb.parse_record(_record(**bad))
    broken = _record()
    del broken["test_patch"]
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['test_patch'\]"):
        sb.parse_record(broken)
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(_record()) + "\n\n" + json.dumps(_record(instance_id="b-2")) + "\n")
    assert [r.instance_id for r in sb.load_records(str(path))] == ["octo__widgets-101", "b-2"]
    path.write_text(json.dumps(_record()) + "\n{oops\n")
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        sb.load_records(str(path))
    path.write_text(json.dumps(_record()) + "\n" + json.dumps(_record()) + "\n")
    with pytest.raises(ValueError, match="duplicate instance_id"):
        sb.load_records(str(path))


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def test_patch_extraction_on_a_real_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    write_repo({"src/w.py": "def f():\n    return 1\n", "src/old.py": "x = 1\n",
                "tests/test_w.py": "def test():\n    pass\n", ".gitignore": "*.log\n"}, str(repo))
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    # The agent's work: an edit, a new file, a deletion, a test edit, an ignored log.
    write_repo({"src/w.py": "def f():\n    return 2\n", "src/new.py": "y = 2\n",
                "tests/test_w.py": "def test():\n    assert False\n", "run.log": "noise"}, str(repo))
    os.remove(repo / "src/old.py")
    status_before = _git(repo, "status", "--porcelain")
    patch = sb.extract_model_patch(str(repo), base, exclude=("tests/test_w.py",))
    assert _git(repo, "status", "--porcelain") == status_before  # the repo's index is untouched
    assert sb.test_files_of_patch(patch) == ("src/new.py", "src/old.py", "src/w.py")
    # Independent check: the patch applied to a clean checkout of base gives the agent's files.
    clean = tmp_path / "clean"
    _git(tmp_path, "clone", "-q", str(repo), str(clean))
    _git(clean, "checkout", "-q", base)
    (tmp_path / "model.patch").write_text(patch)
    _git(clean, "apply", str(tmp_path / "model.patch"))
    assert (clean / "src/w.py").read_text() == "def f():\n    return 2\n"
    assert (clean / "src/new.py").read_text() == "y = 2\n" and not (clean / "src/old.py").exists()
    assert (clean / "tests/test_w.py").read_text() == "def test():\n    pass\n"
    with pytest.raises(RuntimeError, match="rev-parse"):
        sb.extract_model_patch(str(repo), "b" * 40)


def test_predictions_command_line_and_report(tmp_path):
    preds = sb.write_predictions(str(tmp_path / "preds.jsonl"),
                                 {"a-1": "diff --git a/x b/x\n", "b-2": ""}, "org/crl-jax")
    lines = [json.loads(line) for line in open(preds)]
    assert lines == [{"instance_id": "a-1", "model_name_or_path": "org/crl-jax",
                      "model_patch": "diff --git a/x b/x\n"},
                     {"instance_id": "b-2", "model_name_or_path": "org/crl-jax", "model_patch": ""}]
    cmd = sb.evaluation_command("verified.jsonl", preds, "step3", max_workers=2,
                                instance_ids=("a-1", "b-2"), timeout_s=900, report_dir="out",
                                python="python")
    assert cmd == ["python", "-m", "swebench.harness.run_evaluation", "--dataset_name",
                   "verified.jsonl", "--split", "test", "--predictions_path", preds, "--run_id",
                   "step3", "--max_workers", "2", "--instance_ids", "a-1", "b-2",
                   "--timeout", "900", "--report_dir", "out"]
    with pytest.raises(ValueError, match="run_id"):
        sb.evaluation_command("d", preds, "bad id")
    # A run report as swebench.harness.reporting.make_run_report writes it.
    report = {"total_instances": 4, "submitted_instances": 3, "completed_instances": 2,
              "resolved_instances": 1, "unresolved_instances": 1, "empty_patch_instances": 1,
              "error_instances": 0, "completed_ids": ["a-1", "c-3"], "incomplete_ids": ["d-4"],
              "empty_patch_ids": ["b-2"], "submitted_ids": ["a-1", "b-2", "c-3"],
              "resolved_ids": ["a-1"], "unresolved_ids": ["c-3"], "error_ids": [],
              "schema_version": 2}
    path = sb.report_path(str(tmp_path), "org/crl-jax", "step3")
    assert os.path.basename(path) == "org__crl-jax.step3.json"
    with open(path, "w") as f:
        json.dump(report, f)
    assert sb.parse_report(path) == {"a-1": 1.0, "b-2": 0.0, "c-3": 0.0, "d-4": 0.0}
    with pytest.raises(ValueError, match="resolved_ids"):
        sb.parse_report({"total_instances": 1})
    with pytest.raises(ValueError, match="list of instance ids"):
        sb.parse_report({"resolved_ids": "a-1"})
    per_instance = {"a-1": {"patch_is_None": False, "patch_exists": True,
                            "patch_successfully_applied": True, "resolved": False,
                            "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t1"]},
                                             "PASS_TO_PASS": {"success": ["t2"], "failure": []}}}}
    assert sb.parse_instance_report(per_instance) == {
        "a-1": {"resolved": False, "fail_to_pass_failed": ["t1"], "pass_to_pass_failed": []}}


def test_docker_evaluation_refuses_clearly_without_docker(tmp_path):
    problem = sb.docker_problem()
    if problem is None:
        pytest.skip("Docker and swebench are available here; the real run is not a unit test")
    with pytest.raises(RuntimeError, match="cannot run the SWE-bench Docker evaluation"):
        sb.run_evaluation("d.jsonl", "p.jsonl", "r1", "m", report_dir=str(tmp_path))
