"""SWEEnv: the SWE-bench tool setting over a local working copy.

    env = SWEEnv(seed=0, max_steps=30)
    obs, info = env.reset(7)          # generated task of seed 7 (or a LocalTask)
    res = env.step('<function=execute_bash>\\n<parameter=command>\\n'
                   'python -m unittest\\n</parameter>\\n</function>')

Each episode gets a fresh temporary directory: ``<root>/repo`` is the
working copy; ``<root>/.home`` and ``<root>/.tmp`` are the sandbox's HOME
and TMPDIR. The directory is removed on the next reset and on close.
Actions are one tool call each (format in tools.py); the observation is the
tool's output. ``submit`` restores the task's test files (as the SWE-bench
harness does), runs FAIL_TO_PASS + PASS_TO_PASS and ends the episode with
reward 1.0 (``info.won``) if all pass, else 0.0. Reaching ``max_steps``
ends it with reward 0 and ``extra["truncated"]``.

Subtask events (for SDAE), each reported the first time it happens:
  reproduce  a unittest/pytest command printed the name of a failing test
  locate     the buggy file was viewed (editor view, or a bash command naming it)
  edit       the buggy file's content first differs from the original
  fix        all of the task's tests pass on the working copy (checked only
             after a step that changed files, and only while the test files
             are unmodified)
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile

from crl_jax.envs.base import StepInfo, StepResult
from crl_jax.envs.swe.local_tasks import LocalTask, generate_task, run_tests, write_repo
from crl_jax.envs.swe.sandbox import Sandbox, SandboxLimits
from crl_jax.envs.swe.tools import (TOOL_INSTRUCTIONS, FileEditor, ToolError,
                                    format_command_result, parse_tool_call)

SUBTASKS = ("reproduce", "locate", "edit", "fix")
_TEST_RUNNER = re.compile(r"\b(unittest|pytest)\b")


class SWEEnv:
    name = "swe_local"

    def __init__(self, seed: int = 0, max_steps: int = 30, command_timeout_s: float = 20.0,
                 test_timeout_s: float = 60.0, max_output_bytes: int = 1 << 20,
                 max_observation_chars: int = 6000, num_modules: int | None = None,
                 track_fix: bool = True, work_dir: str | None = None,
                 require_sandbox: tuple[str, ...] = ()):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self._next_seed = int(seed)
        self.max_steps = max_steps
        self.limits = SandboxLimits(timeout_s=command_timeout_s, max_output_bytes=max_output_bytes)
        self.test_timeout_s = test_timeout_s
        self.max_observation_chars = max_observation_chars
        self.num_modules = num_modules
        self.track_fix = track_fix
        self.work_dir = work_dir
        self.require_sandbox = tuple(require_sandbox)
        self.root: str | None = None
        self.task: LocalTask | None = None
        self.sandbox: Sandbox | None = None
        self._done = True

    # -- protocol -----------------------------------------------------
    def reset(self, task: str | int | LocalTask | None = None) -> tuple[str, StepInfo]:
        self.task = self._resolve_task(task)
        self._cleanup()
        self.root = tempfile.mkdtemp(prefix="crl_swe_", dir=self.work_dir)
        self.repo = os.path.join(self.root, "repo")
        os.makedirs(self.repo)
        write_repo(self.task.files, self.repo)
        self.sandbox = Sandbox(self.root, self.limits, require=self.require_sandbox)
        self.editor = FileEditor(self.repo, max_view_chars=self.max_observation_chars)
        self._turn, self._done, self._seen = 0, False, []
        self._fingerprint = self._repo_fingerprint()
        self._failing_names = {t.rsplit(".", 1)[-1] for t in self.task.fail_to_pass}
        return self._first_observation(), self._info(())

    def step(self, action: str) -> StepResult:
        if self._done:
            raise RuntimeError("step() after the episode ended; call reset()")
        self._turn += 1
        call, error = parse_tool_call(action)
        events, reward, won, invalid, extra = [], 0.0, False, False, {}
        if call is None:
            obs, invalid = error, True
        elif call.name == "submit":
            obs, won, extra = self._submit()
            reward, self._done = float(won), True
        elif call.name == "execute_bash":
            res = self.sandbox.run(call.args["command"], cwd=self.repo)
            obs = format_command_result(res, self.max_observation_chars)
            if _TEST_RUNNER.search(call.args["command"]) and any(
                    name in res.output for name in self._failing_names):
                events.append("reproduce")
            if self._names_buggy_file(call.args["command"]) and res.exit_code == 0:
                events.append("locate")
        else:  # str_replace_editor
            try:
                obs = self.editor(**call.args)
                if (call.args["command"] == "view"
                        and self.editor.resolve(call.args["path"]) == self._buggy_path()):
                    events.append("locate")
            except ToolError as err:
                obs, invalid = str(err), True
            except TypeError as err:  # an argument the sub-command does not take
                obs, invalid = f"Error: {err}", True
        if not self._done:
            events += self._state_events()
        if not self._done and self._turn >= self.max_steps:
            self._done, extra["truncated"] = True, True
        events = [e for e in dict.fromkeys(events) if e not in self._seen]
        self._seen += events
        return StepResult(obs, reward, self._done,
                          self._info(events, won=won, invalid=invalid, extra=extra))

    def close(self) -> None:
        self._cleanup()
        self._done = True

    # -- helpers ------------------------------------------------------
    def _resolve_task(self, task) -> LocalTask:
        if isinstance(task, LocalTask):
            return task
        if task is None:
            seed = self._next_seed
        elif isinstance(task, int) and not isinstance(task, bool):
            seed = task
        elif isinstance(task, str) and task.rsplit(":", 1)[-1].isdigit():
            seed = int(task.rsplit(":", 1)[-1])
        else:
            raise ValueError(f"SWE task must be an int seed, 'swe_local:<seed>' or a "
                             f"LocalTask, got {task!r}")
        self._next_seed = seed + 1
        return generate_task(seed, num_modules=self.num_modules)

    def _cleanup(self):
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _buggy_path(self) -> str:
        return os.path.realpath(os.path.join(self.repo, self.task.buggy_file))

    def _names_buggy_file(self, command: str) -> bool:
        return self.task.buggy_file in command or re.search(
            rf"(^|[\s/'\"]){re.escape(os.path.basename(self.task.buggy_file))}\b", command) is not None

    def _repo_fingerprint(self):
        stamp = []
        for dirpath, dirnames, filenames in os.walk(self.repo):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(filenames):
                try:
                    st = os.stat(os.path.join(dirpath, f))
                except OSError:
                    continue
                stamp.append((dirpath, f, st.st_size, st.st_mtime_ns))
        return tuple(stamp)

    def _read(self, rel):
        try:
            with open(os.path.join(self.repo, rel), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def _state_events(self) -> list[str]:
        """edit / fix, checked only when the working copy changed."""
        fingerprint = self._repo_fingerprint()
        if fingerprint == self._fingerprint:
            return []
        self._fingerprint = fingerprint
        events = []
        if self._read(self.task.buggy_file) != self.task.files[self.task.buggy_file]:
            events.append("edit")
        tests_intact = all(self._read(p) == self.task.files[p] for p in self.task.test_files)
        if self.track_fix and "fix" not in self._seen and tests_intact:
            results, _ = run_tests(self.sandbox, self.repo, self._all_tests(), self.test_timeout_s)
            if all(results.values()):
                events.append("fix")
        return events

    def _all_tests(self):
        return self.task.fail_to_pass + self.task.pass_to_pass

    def _submit(self):
        write_repo({p: self.task.files[p] for p in self.task.test_files}, self.repo)
        results, _ = run_tests(self.sandbox, self.repo, self._all_tests(), self.test_timeout_s)
        failed = [t for t, ok in results.items() if not ok]
        won = not failed
        obs = (f"Submitted. Tests: {len(results) - len(failed)}/{len(results)} passed."
               + ("" if won else "\nFailing: " + ", ".join(failed)))
        return obs, won, {"tests": results}

    def _first_observation(self) -> str:
        listing = self.editor("view", ".")
        return (f"<issue>\n{self.task.issue.strip()}\n</issue>\n\n"
                f"The repository is checked out at {self.repo} (the working directory of "
                f"execute_bash). Fix the issue by editing the source, not the tests; the "
                f"tests are run by `python -m unittest`.\n\n{listing}\n\n{TOOL_INSTRUCTIONS}")

    def _info(self, events, won=False, invalid=False, extra=None) -> StepInfo:
        extra = dict(extra or {})
        extra.setdefault("bug_kind", self.task.bug_kind)
        return StepInfo(won=won, admissible_actions=(), goal=self.task.title,
                        subtask_events=tuple(events), subtasks=SUBTASKS,
                        invalid_action=invalid, task_id=self.task.task_id, extra=extra)
