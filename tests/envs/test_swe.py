"""The SWE tool environment: sandbox limits, tools, generated tasks, env,
expert and the SWE-bench harness adapter (all but the Docker call)."""
import json
import os
import pwd
import random
import resource
import socket
import subprocess
import time
import uuid

import pytest

from crl_jax.envs import registry
from crl_jax.envs.base import TextEnv
from crl_jax.envs.swe import swebench_adapter as sb
from crl_jax.envs.swe.env import SUBTASKS, SWEEnv
from crl_jax.envs.swe.expert import SWEExpert
from crl_jax.envs.swe.local_tasks import TEMPLATES, generate_task, run_tests, write_repo
from crl_jax.envs.swe.repo_templates import BUG_KINDS
from crl_jax.envs.swe.sandbox import Sandbox, SandboxLimits
from crl_jax.envs.swe.tools import FileEditor, ToolError, format_tool_call, parse_tool_call

# The sandbox warns once about each mechanism it cannot enforce; the tests
# below skip with that reason instead.
pytestmark = pytest.mark.filterwarnings("ignore:sandbox")
NUM_SITES = sum(len(m.sites) for m in TEMPLATES)


@pytest.fixture
def box(tmp_path):
    root = tmp_path / "episode"
    (root / "repo").mkdir(parents=True)
    return Sandbox(str(root), SandboxLimits(timeout_s=10, max_output_bytes=64 << 10))


def _require(box, mechanism):
    if not box.enforced[mechanism]:
        pytest.skip(f"{mechanism} not enforceable here: {box.warnings[mechanism]}")


# -- sandbox ---------------------------------------------------------------
def test_sleep_forever_times_out_and_leftovers_die(box):
    marker = os.path.join(box.root, "late_marker")
    res = box.run(f"(setsid bash -c 'sleep 1.5; touch {marker}' &); echo started; sleep 1000",
                  timeout_s=1.0)
    assert res.timed_out and res.exit_code is None and "started" in res.output
    _require(box, "process_cleanup")
    time.sleep(2.5)  # the setsid'd child would have written the marker by now
    assert not os.path.exists(marker)


@pytest.mark.parametrize("command", ["yes", "python -c \"while True: print('x' * 10000)\""])
def test_gigabytes_of_output_are_truncated_with_bounded_memory(box, command):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    res = box.run(command, timeout_s=60)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert res.truncated and not res.timed_out and res.exit_code is None
    assert len(res.output.encode()) <= box.limits.max_output_bytes < res.output_bytes
    assert res.output.startswith("y\ny\n" if command == "yes" else "x" * 100)
    assert grown_mib < 64


def test_writes_outside_the_root_fail(box, tmp_path):
    _require(box, "filesystem")
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    victim = sibling / "victim.txt"
    victim.write_text("keep me")
    home_probe = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, f"crl_swe_probe_{uuid.uuid4().hex}")
    res = box.run(f"echo x > {sibling}/new.txt; echo x > {home_probe}; rm -f {victim}; "
                  f"mkdir {sibling}/d; python -c \"open('{sibling}/py.txt', 'w')\"; "
                  f"echo inside > inside.txt; echo x > /dev/null && echo devnull-ok")
    assert sorted(os.listdir(sibling)) == ["victim.txt"] and victim.read_text() == "keep me"
    assert not os.path.exists(home_probe)
    assert "Permission denied" in res.output and "devnull-ok" in res.output
    assert open(os.path.join(box.root, "inside.txt")).read() == "inside\n"


def test_network_is_unreachable(box):
    _require(box, "network")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        probe = ("import socket\nfor addr in [('127.0.0.1', %d), ('1.1.1.1', 80)]:\n"
                 "    try:\n        socket.create_connection(addr, timeout=3); print('CONNECTED', addr)\n"
                 "    except OSError as e:\n        print('FAILED', addr, e)\n") % port
        with open(os.path.join(box.root, "probe.py"), "w") as f:
            f.write(probe)
        res = box.run("python probe.py")
        assert res.output.count("FAILED") == 2 and "CONNECTED" not in res.output, res.output
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody reached the test's listening port


def test_environment_is_scrubbed(box, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("GITHUB_TOKEN", "secret-token")
    res = box.run("env")
    env = dict(line.split("=", 1) for line in res.output.splitlines() if "=" in line)
    assert set(env) - {"PWD", "SHLVL", "_"} == {"PATH", "HOME", "TMPDIR", "LANG",
                                                 "PYTHONDONTWRITEBYTECODE"}
    assert env["HOME"].startswith(box.root) and env["TMPDIR"].startswith(box.root)
    assert "secret-token" not in res.output


def test_file_size_limit(tmp_path):
    box = Sandbox(str(tmp_path), SandboxLimits(timeout_s=10, max_file_bytes=1 << 20))
    _require(box, "rlimits")
    box.run("head -c 3000000 /dev/zero > big.bin")
    assert os.path.getsize(tmp_path / "big.bin") <= 1 << 20


def test_process_limit(tmp_path):
    box = Sandbox(str(tmp_path), SandboxLimits(timeout_s=20, max_processes=16))
    _require(box, "max_processes")
    res = box.run("for i in $(seq 40); do sleep 2 & done; wait")
    assert "fork" in res.output or "Resource temporarily unavailable" in res.output


def test_sandbox_rejects_cwd_outside_and_bad_limits(box, tmp_path):
    with pytest.raises(ValueError, match="outside the sandbox root"):
        box.run("true", cwd=str(tmp_path))
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    assert box.run("exit 7").exit_code == 7


# -- tool-call parser and editor ---------------------------------------------
def test_parser_accepts_the_documented_format():
    text = ("I will list files.\n<tool_call>\n<function=execute_bash>\n<parameter=command>\n"
            "ls -la\n</parameter>\n</function>\n</tool_call>")
    call, err = parse_tool_call(text)
    assert err == "" and call.name == "execute_bash" and call.args == {"command": "ls -la"}
    call, _ = parse_tool_call("<function=str_replace_editor><parameter=command>view"
                              "</parameter><parameter=path>a.py")  # cut by a stop sequence
    assert call.args == {"command": "view", "path": "a.py"}
    assert parse_tool_call("<function=submit>\n</function>")[0].args == {}
    args = {"command": "str_replace", "path": "p.py", "old_str": "  if x < 1:\n\n",
            "new_str": "\n  if x <= 1:"}
    assert parse_tool_call(format_tool_call("str_replace_editor", **args))[0].args == args


@pytest.mark.parametrize("text,message", [
    ("ls -la", "no tool call"),
    ("<function=execute_bash><parameter=command>ls</parameter></function>"
     "<function=submit></function>", "2 tool calls"),
    ("<function=rm_rf><parameter=command>x</parameter></function>", "unknown tool"),
    ("<function=execute_bash></function>", "needs parameter"),
    ("<function=execute_bash><parameter=cmd>ls</parameter></function>", "no parameter"),
    ("<function=execute_bash><parameter=command>a</parameter><parameter=command>b</parameter>"
     "</function>", "given twice"),
    ("<function=execute_bash>ls<parameter=command>a</parameter></function>", "outside any"),
    (None, "must be text"),
])
def test_parser_errors_are_messages(text, message):
    call, err = parse_tool_call(text)
    assert call is None and message in err


def test_parser_never_raises_on_garbage():
    rng = random.Random(0)
    pieces = ["<function=", "execute_bash", ">", "<parameter=", "command", "</parameter>",
              "</function>", "\n", "ls", "<", "=", "submit", "\x00", "é"]
    for _ in range(500):
        call, err = parse_tool_call("".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))))
        assert (call is None) != (err == "")


@pytest.fixture
def editor(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text("one\ntwo\nthree\n")
    (repo / ".hidden").write_text("x")
    (tmp_path / "outside.txt").write_text("secret")
    return FileEditor(str(repo))


def test_editor_view_create_replace_insert_undo(editor):
    assert editor("view", "pkg/a.py").splitlines()[1:] == [
        "     1\tone", "     2\ttwo", "     3\tthree", "     4\t"]
    assert editor("view", "pkg/a.py", view_range="[2, 3]").splitlines()[1:] == [
        "     2\ttwo", "     3\tthree"]
    assert editor("view", ".").splitlines()[1:] == ["pkg/", "pkg/a.py"]
    editor("str_replace", "pkg/a.py", old_str="two", new_str="TWO")
    editor("insert", "pkg/a.py", insert_line="0", new_str="zero")
    path = os.path.join(editor.root, "pkg", "a.py")
    assert open(path).read() == "zero\none\nTWO\nthree\n"
    editor("undo_edit", "pkg/a.py")
    assert open(path).read() == "one\nTWO\nthree\n"
    editor("undo_edit", "pkg/a.py")
    assert open(path).read() == "one\ntwo\nthree\n"
    editor("create", "pkg/new/b.py", file_text="print(1)\n")
    assert open(os.path.join(editor.root, "pkg/new/b.py")).read() == "print(1)\n"
    editor("undo_edit", "pkg/new/b.py")
    assert not os.path.exists(os.path.join(editor.root, "pkg/new/b.py"))


@pytest.mark.parametrize("call,message", [
    (("str_replace", "pkg/a.py", {"old_str": "t", "new_str": "T"}), "occurs 2 times"),
    (("str_replace", "pkg/a.py", {"old_str": "four"}), "does not occur"),
    (("create", "pkg/a.py", {"file_text": ""}), "already exists"),
    (("insert", "pkg/a.py", {"insert_line": "9", "new_str": "x"}), "outside [0, 4]"),
    (("view", "pkg/a.py", {"view_range": "[3, 1]"}), "invalid"),
    (("undo_edit", "pkg/a.py", {}), "no edit"),
    (("delete", "pkg/a.py", {}), "unknown command"),
    (("view", "../outside.txt", {}), "outside the repository"),
    (("view", "/etc/passwd", {}), "outside the repository"),
])
def test_editor_errors(editor, call, message):
    command, path, kw = call
    with pytest.raises(ToolError, match=message.replace("[", r"\[")):
        editor(command, path, **kw)


def test_editor_rejects_symlinks_pointing_out(editor, tmp_path):
    os.symlink(str(tmp_path), os.path.join(editor.root, "escape"))
    os.symlink(str(tmp_path / "outside.txt"), os.path.join(editor.root, "file_link"))
    os.symlink("pkg/a.py", os.path.join(editor.root, "inner_link"))
    for path in ("escape/outside.txt", "file_link"):
        with pytest.raises(ToolError, match="outside the repository"):
            editor("view", path)
    with pytest.raises(ToolError, match="outside the repository"):
        editor("create", "escape/planted.py", file_text="x")
    assert not (tmp_path / "planted.py").exists()
    assert "one" in editor("view", "inner_link")


# -- generated tasks -----------------------------------------------------------
def test_every_bug_site_fails_exactly_fail_to_pass(tmp_path):
    """Seeds 0..47 cover all sites; the buggy repo fails exactly FAIL_TO_PASS
    and the fixed one passes everything."""
    box = Sandbox(str(tmp_path), SandboxLimits(timeout_s=60))
    sites = set()
    for seed in range(48):
        task = generate_task(seed)
        sites.add((task.buggy_file.split("/")[1], task.fix_old))
        ids = task.fail_to_pass + task.pass_to_pass
        assert len(set(ids)) == len(ids) and task.fail_to_pass
        for files, expected_failures in ((task.files, set(task.fail_to_pass)),
                                         (task.fixed_files(), set())):
            repo = tmp_path / f"repo_{seed}_{len(expected_failures)}"
            write_repo(files, str(repo))
            results, out = run_tests(box, str(repo), ids)
            assert {t for t, ok in results.items() if not ok} == expected_failures, (seed, out)
    assert len(sites) == NUM_SITES


def test_task_generation_is_deterministic_and_well_formed():
    assert generate_task(11) == generate_task(11) and generate_task(11) != generate_task(12)
    assert {generate_task(s).bug_kind for s in range(8)} == set(BUG_KINDS) and len(BUG_KINDS) >= 5
    for seed in range(40):
        task = generate_task(seed)
        modules = [p for p in task.files if p.count("/") == 1 and not p.startswith("tests/")
                   and not p.endswith("__init__.py")]
        assert 2 <= len(modules) <= 4 and task.buggy_file in modules
        assert task.files[task.buggy_file].count(task.fix_old) == 1
        assert task.fix_old not in task.issue and task.fix_new not in task.issue
        assert task.issue.count(">>> ") >= 2 and "I expected" in task.issue
    with pytest.raises(ValueError, match="seed"):
        generate_task(-1)
    with pytest.raises(ValueError, match="num_modules"):
        generate_task(0, num_modules=1)


# -- environment and expert ----------------------------------------------------
def _call(name, **args):
    return format_tool_call(name, **args)


def test_expert_solves_every_task_with_ordered_subtasks():
    env, expert = registry.make_env("swe_local", max_steps=10), registry.make_expert("swe_local")
    assert isinstance(env, SWEEnv) and isinstance(expert, SWEExpert) and isinstance(env, TextEnv)
    # One seed per planted-bug site: seed = kind index + 8 * site index.
    from crl_jax.envs.swe.local_tasks import BUG_KINDS, SITES_BY_KIND
    seeds = [k + len(BUG_KINDS) * j for k, kind in enumerate(BUG_KINDS)
             for j in range(len(SITES_BY_KIND[kind]))]
    assert len(seeds) == sum(len(v) for v in SITES_BY_KIND.values())
    won = 0
    for seed in seeds:
        obs, info = env.reset(seed)
        expert.reset()
        events, done, steps = [], False, 0
        while not done:
            res = env.step(expert.act(env))
            events += res.info.subtask_events
            done, steps = res.done, steps + 1
        won += res.info.won and res.reward == 1.0
        assert events == list(SUBTASKS) and steps == 5, (seed, events)
    env.close()
    assert won == len(seeds)


def test_episode_directory_lifecycle_and_first_observation():
    env = SWEEnv()
    obs, info = env.reset("swe_local:4")
    first_root, task = env.root, env.task
    assert task.task_id == info.task_id == "swe_local:4" and info.subtasks == SUBTASKS
    assert task.issue.strip() in obs and task.buggy_file in obs and "<function=" in obs
    assert info.admissible_actions == () and info.goal == task.title
    env.reset(task)  # a task record object
    assert env.root != first_root and not os.path.exists(first_root)
    second_root = env.root
    env.close()
    assert not os.path.exists(second_root)
    with pytest.raises(ValueError, match="SWE task"):
        env.reset("not a task")


def test_invalid_calls_submit_failures_and_turn_cap():
    env = SWEEnv(max_steps=4)
    env.reset(2)
    res = env.step("please fix it")
    assert res.info.invalid_action and not res.done and res.observation.startswith("Error")
    res = env.step(_call("str_replace_editor", command="view", path="../../etc/passwd"))
    assert res.info.invalid_action and "outside" in res.observation
    res = env.step(_call("execute_bash", command="false"))
    assert not res.info.invalid_action and "[exit code: 1]" in res.observation
    res = env.step(_call("execute_bash", command="echo still going"))
    assert res.done and res.reward == 0.0 and res.info.extra["truncated"]
    with pytest.raises(RuntimeError):
        env.step(_call("submit"))
    env.reset(2)
    res = env.step(_call("submit"))
    assert res.done and res.reward == 0.0 and not res.info.won and "Failing" in res.observation
    env.close()


def test_editing_the_tests_does_not_win_but_a_bash_fix_does():
    env = SWEEnv()
    env.reset(9)
    task = env.task
    test_file = next(p for p in task.test_files if task.fail_to_pass[0].split(".")[1] in p)
    # Make the failing test pass by deleting its assertions: no fix event, submit fails.
    res = env.step(_call("execute_bash", command=f"sed -i 's/self.assert/pass  # /' {test_file}"))
    assert "fix" not in res.info.subtask_events
    assert env.step(_call("submit")).reward == 0.0
    env.reset(9)
    with open(os.path.join(env.root, "patch.py"), "w") as f:  # a fix applied from bash
        f.write(f"p = {task.buggy_file!r}\ns = open(p).read()\n"
                f"open(p, 'w').write(s.replace({task.fix_old!r}, {task.fix_new!r}))\n")
    res = env.step(_call("execute_bash", command="python ../patch.py"))
    assert res.info.subtask_events == ("edit", "fix")
    res = env.step(_call("submit"))
    assert res.done and res.reward == 1.0 and res.info.won
    env.close()


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


def test_compact_prompts_keep_multiline_tool_calls_whole():
    from crl_jax import prompts
    from crl_jax.envs.registry import make_env, make_expert
    env, expert = make_env("swe_local"), make_expert("swe_local")
    try:
        env.reset(5)
        expert.reset()
        action = expert.act(env)
        assert "\n" in action and action.startswith("<function=")
        assert prompts.parse_action(action + "\ntrailing junk", "compact") == action
        assert prompts.parse_action("  " + action, "compact") == action
    finally:
        env.close()
    assert prompts.parse_action("go to desk 1\nmore", "compact") == "go to desk 1"
