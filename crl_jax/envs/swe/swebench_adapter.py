"""The real SWE-bench harness: task records in, rewards out.

    records = load_records("swe_bench_verified.jsonl")       # or parse_record(dict)
    patch = extract_model_patch(repo_dir, rec.base_commit,
                                exclude=test_files_of_patch(rec.test_patch))
    write_predictions("preds.jsonl", {rec.instance_id: patch}, model_name="crl-jax")
    rewards = run_evaluation("swe_bench_verified.jsonl", "preds.jsonl", run_id="step12",
                             model_name="crl-jax")            # needs Docker + swebench
    # or, from a report written earlier:
    rewards = parse_report(report_path(".", "crl-jax", "step12"))

Formats follow the official ``swebench`` package (checked against release
5.0.2: swebench/harness/run_evaluation.py, reporting.py, utils.py):
- a record has instance_id, repo, base_commit, problem_statement,
  test_patch, patch, and FAIL_TO_PASS / PASS_TO_PASS as JSON-encoded lists
  of test ids (the dataset stores strings; already-decoded lists are accepted);
- predictions are JSONL lines {instance_id, model_name_or_path, model_patch};
- ``python -m swebench.harness.run_evaluation --dataset_name D
  --predictions_path P --run_id R --max_workers N [--instance_ids ...]
  [--timeout S] [--report_dir DIR]``; ``--dataset_name`` may be a local
  .json/.jsonl file (offline), or a hub name such as
  SWE-bench/SWE-bench_Verified;
- the run report is ``{report_dir}/{model_name_or_path with '/' -> '__'}.{run_id}.json``
  with resolved_ids, unresolved_ids, error_ids, empty_patch_ids, ... .
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch",
            "patch", "FAIL_TO_PASS", "PASS_TO_PASS")
REPORT_ID_LISTS = ("resolved_ids", "unresolved_ids", "error_ids", "empty_patch_ids",
                   "incomplete_ids", "completed_ids", "submitted_ids")


@dataclasses.dataclass(frozen=True)
class SWEBenchRecord:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    test_patch: str
    patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    extra: dict = dataclasses.field(default_factory=dict)  # version, hints_text, ...

    @property
    def test_files(self) -> tuple[str, ...]:
        return test_files_of_patch(self.test_patch)


def _test_list(value, field: str, iid: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as err:
            raise ValueError(f"record {iid!r}: {field} is not valid JSON ({err}); expected a "
                             f"JSON-encoded list of test ids such as '[\"tests/a.py::t\"]'") from None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ValueError(f"record {iid!r}: {field} must be a list of strings (or its JSON "
                         f"encoding), got {type(value).__name__}")
    return tuple(value)


def parse_record(obj) -> SWEBenchRecord:
    """A validated record; ValueError names the instance and the bad field."""
    if not isinstance(obj, dict):
        raise ValueError(f"a SWE-bench record must be a JSON object, got {type(obj).__name__}")
    iid = obj.get("instance_id", "<no instance_id>")
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise ValueError(f"record {iid!r} lacks field(s) {missing}; required: {list(REQUIRED)}")
    for key in REQUIRED[:6]:
        if not isinstance(obj[key], str):
            raise ValueError(f"record {iid!r}: {key} must be a string, got {type(obj[key]).__name__}")
    if not obj["instance_id"].strip():
        raise ValueError("record has an empty instance_id")
    if not re.fullmatch(r"[0-9a-f]{7,40}", obj["base_commit"]):
        raise ValueError(f"record {iid!r}: base_commit {obj['base_commit']!r} is not a git hash")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", obj["repo"]):
        raise ValueError(f"record {iid!r}: repo {obj['repo']!r} is not of the form owner/name")
    return SWEBenchRecord(
        instance_id=obj["instance_id"], repo=obj["repo"], base_commit=obj["base_commit"],
        problem_statement=obj["problem_statement"], test_patch=obj["test_patch"],
        patch=obj["patch"], fail_to_pass=_test_list(obj["FAIL_TO_PASS"], "FAIL_TO_PASS", iid),
        pass_to_pass=_test_list(obj["PASS_TO_PASS"], "PASS_TO_PASS", iid),
        extra={k: v for k, v in obj.items() if k not in REQUIRED})


def load_records(path: str) -> list[SWEBenchRecord]:
    """Records from a .jsonl file (one per line) or a .json list; errors say
    which line/entry is bad. Duplicate instance ids are an error."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".jsonl"):
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"line {number}", json.loads(line)))
            except ValueError as err:
                raise ValueError(f"{path}: line {number} is not valid JSON: {err}") from None
    elif path.endswith(".json"):
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
        items = [(f"entry {i}", d) for i, d in enumerate(data)]
    else:
        raise ValueError(f"{path}: records must be in a .jsonl or .json file")
    records, seen = [], set()
    for where, obj in items:
        try:
            rec = parse_record(obj)
        except ValueError as err:
            raise ValueError(f"{path}: {where}: {err}") from None
        if rec.instance_id in seen:
            raise ValueError(f"{path}: {where}: duplicate instance_id {rec.instance_id!r}")
        seen.add(rec.instance_id)
        records.append(rec)
    return records


def test_files_of_patch(patch: str) -> tuple[str, ...]:
    """Paths a unified git diff touches (both sides of renames), in order."""
    paths = []
    for a, b in re.findall(r"^diff --git a/(\S+) b/(\S+)$", patch, re.MULTILINE):
        for p in (a, b):
            if p not in paths:
                paths.append(p)
    return tuple(paths)


def _git(repo_dir, *args, env=None) -> str:
    cmd = ["git", "-c", "safe.directory=*", "-c", "core.quotepath=false", "-C", repo_dir, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def extract_model_patch(repo_dir: str, base_commit: str, exclude=()) -> str:
    """The working copy's changes against ``base_commit`` as a git diff, new
    (untracked, not ignored) files included, the paths in ``exclude`` (the
    test patch's files, which the harness overwrites) left out. The repo's
    own index is not touched: a throw-away index is used."""
    if shutil.which("git") is None:
        raise RuntimeError("git is not installed; it is needed to extract the model patch")
    _git(repo_dir, "rev-parse", "--verify", f"{base_commit}^{{commit}}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        _git(repo_dir, "add", "-A", "--", ".", env=env)
        specs = [f":(exclude,literal){p}" for p in exclude]
        patch = _git(repo_dir, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff",
                     base_commit, "--", ".", *specs, env=env)
    return patch


def write_predictions(path: str, patches: dict, model_name: str) -> str:
    """The official predictions JSONL: one {instance_id, model_name_or_path,
    model_patch} line per instance. Returns ``path``."""
    if not model_name or not isinstance(model_name, str):
        raise ValueError(f"model_name must be a non-empty string, got {model_name!r}")
    with open(path, "w", encoding="utf-8") as f:
        for iid, patch in patches.items():
            if not isinstance(patch, str):
                raise ValueError(f"patch of {iid!r} must be a string, got {type(patch).__name__}")
            f.write(json.dumps({"instance_id": iid, "model_name_or_path": model_name,
                                "model_patch": patch}) + "\n")
    return path


def evaluation_command(dataset_name: str, predictions_path: str, run_id: str,
                       max_workers: int = 4, instance_ids=(), timeout_s: int | None = None,
                       report_dir: str | None = None, split: str = "test",
                       python: str = sys.executable) -> list[str]:
    """argv of the official Docker evaluation."""
    if not run_id or not re.fullmatch(r"[\w.-]+", run_id):
        raise ValueError(f"run_id must be non-empty letters/digits/._-, got {run_id!r}")
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    cmd = [python, "-m", "swebench.harness.run_evaluation", "--dataset_name", dataset_name,
           "--split", split, "--predictions_path", predictions_path, "--run_id", run_id,
           "--max_workers", str(max_workers)]
    if instance_ids:
        cmd += ["--instance_ids", *instance_ids]
    if timeout_s is not None:
        cmd += ["--timeout", str(int(timeout_s))]
    if report_dir is not None:
        cmd += ["--report_dir", report_dir]
    return cmd


def report_path(report_dir: str, model_name: str, run_id: str) -> str:
    return os.path.join(report_dir, f"{model_name.replace('/', '__')}.{run_id}.json")


def docker_problem() -> str | None:
    """Why the Docker evaluation cannot run here, or None if it can."""
    if importlib.util.find_spec("swebench") is None:
        return "the swebench package is not installed (pip install swebench==5.0.2)"
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        out = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"docker info failed: {err}"
    if out.returncode != 0:
        return f"no Docker daemon reachable (docker info: {out.stderr.strip()[:300]})"
    return None


def run_evaluation(dataset_name: str, predictions_path: str, run_id: str, model_name: str,
                   max_workers: int = 4, instance_ids=(), timeout_s: int | None = None,
                   report_dir: str = ".", cwd: str | None = None) -> dict[str, float]:
    """Run the official harness and return per-instance rewards."""
    problem = docker_problem()
    if problem:
        raise RuntimeError(f"cannot run the SWE-bench Docker evaluation: {problem}")
    cmd = evaluation_command(dataset_name, predictions_path, run_id, max_workers,
                             instance_ids, timeout_s, report_dir)
    subprocess.run(cmd, check=True, cwd=cwd)
    return parse_report(report_path(os.path.join(cwd or ".", report_dir), model_name, run_id))


def parse_report(report) -> dict[str, float]:
    """{instance_id: reward} from a run report (dict or path): 1.0 for each
    resolved id, 0.0 for every other id the report names (unresolved,
    errors, empty patches, incomplete, submitted)."""
    if isinstance(report, str):
        with open(report, encoding="utf-8") as f:
            try:
                report = json.load(f)
            except ValueError as err:
                raise ValueError(f"{f.name}: not a JSON report: {err}") from None
    if not isinstance(report, dict) or "resolved_ids" not in report:
        raise ValueError("not a swebench run report: expected an object with 'resolved_ids' "
                         "(written by swebench.harness.run_evaluation)")
    rewards: dict[str, float] = {}
    for key in REPORT_ID_LISTS:
        ids = report.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError(f"report field {key!r} must be a list of instance ids")
        for iid in ids:
            rewards.setdefault(iid, 0.0)
    for iid in report["resolved_ids"]:
        rewards[iid] = 1.0
    return rewards


def parse_instance_report(report) -> dict[str, dict]:
    """{instance_id: {resolved, fail_to_pass_failed, pass_to_pass_failed}} from
    a per-instance report.json (logs/run_evaluation/RUN/MODEL/ID/report.json)."""
    if isinstance(report, str):
        with open(report, encoding="utf-8") as f:
            report = json.load(f)
    out = {}
    for iid, body in report.items():
        if not isinstance(body, dict) or "resolved" not in body:
            raise ValueError(f"instance report of {iid!r} lacks 'resolved'")
        status = body.get("tests_status", {})
        out[iid] = {"resolved": bool(body["resolved"]),
                    "fail_to_pass_failed": list(status.get("FAIL_TO_PASS", {}).get("failure", [])),
                    "pass_to_pass_failed": list(status.get("PASS_TO_PASS", {}).get("failure", []))}
    return out
