"""The SWE tool environment: sandbox limits, tools, generated tasks, env,
expert and the SWE-bench harness adapter (all but the Docker call)."""
import os
import pwd
import random
import resource
import signal
import socket
import time
import uuid

import pytest

from crl_jax.envs import registry
from crl_jax.envs.base import TextEnv
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


def _too_long(signum, frame):
    raise TimeoutError("the test ran past its hard limit")


def test_a_fork_bomb_is_contained(tmp_path):
    """As root too (a pids cgroup there, RLIMIT_NPROC otherwise): the bomb
    hits the cap, and the time limit ends it with everything it started."""
    box = Sandbox(str(tmp_path), SandboxLimits(timeout_s=5, max_processes=32))
    _require(box, "max_processes")
    _require(box, "process_cleanup")
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(60)  # a hard limit on the test itself
    try:
        res = box.run("bomb() { bomb | bomb & }; bomb; sleep 30")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 20
    assert "fork" in res.output or "Resource temporarily unavailable" in res.output
    survivors = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith("bash")
                 and str(tmp_path) in _environ(p)]
    assert not survivors


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _environ(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def test_root_only_files_and_files_outside_the_root_are_unreadable(box, tmp_path):
    _require(box, "reads")
    elsewhere = tmp_path / "solution.txt"  # world-readable, beside the episode
    elsewhere.write_text("the answer")
    res = box.run(f"cat /etc/shadow; cat {elsewhere}; ls {os.path.dirname(__file__)}; "
                  "python -c 'print(6 * 7)'")
    assert "the answer" not in res.output and "root:" not in res.output
    assert "test_swe.py" not in res.output  # nor the project's own files
    assert "42" in res.output  # the interpreter and its library are readable
    assert res.output.count("Permission denied") >= 2


def test_enforced_names_every_mechanism_and_says_why_one_is_missing(box):
    from crl_jax.envs.swe.sandbox import MECHANISMS
    assert set(box.enforced) == set(MECHANISMS)
    assert all(box.warnings.get(m) for m, on in box.enforced.items() if not on)
    if os.geteuid() == 0:  # no mechanism may claim to bind root when it cannot
        assert "RLIMIT_NPROC" not in str(box._config("true", box.root, 1)["rlimits"])


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


def test_compact_prompts_keep_multiline_tool_calls_whole():
    from crl_jax.rl import prompts
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
