"""A demonstration expert for SWEEnv: reproduce, locate, fix, verify, submit.

It reads the task's known fix (privileged, as a human demonstrator who knows
the answer) and acts through the same tool calls a model would emit:

1. run the failing tests with ``python -m unittest <FAIL_TO_PASS ids>``;
2. view the buggy file with str_replace_editor;
3. str_replace the buggy snippet by the fixed one;
4. run the whole suite;
5. submit.
Steps are chosen from what the episode has already achieved (its subtask
events), so the expert can also take over an episode begun by someone else.
"""
from __future__ import annotations

from crl_jax.envs.swe.tools import format_tool_call


class SWEExpert:
    def __init__(self):
        self.reset()

    def reset(self):
        self._verified = False

    def act(self, env) -> str:
        task, seen = env.task, set(env._seen)
        if "reproduce" not in seen:
            return format_tool_call("execute_bash",
                                    command="python -m unittest " + " ".join(task.fail_to_pass))
        if "locate" not in seen:
            return format_tool_call("str_replace_editor", command="view", path=task.buggy_file)
        if task.fix_old in (env._read(task.buggy_file) or ""):
            return format_tool_call("str_replace_editor", command="str_replace",
                                    path=task.buggy_file, old_str=task.fix_old,
                                    new_str=task.fix_new)
        if not self._verified:
            self._verified = True
            return format_tool_call("execute_bash", command="python -m unittest")
        return format_tool_call("submit")
