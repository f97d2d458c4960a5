"""The three tools of the SWE-bench setting and the parser of tool calls.

Tools (as in SWE-bench agents such as OpenHands / SWE-agent):

- ``execute_bash(command)``: a shell command in the working copy (sandboxed
  by the environment);
- ``str_replace_editor(command, path, ...)``: view / create / str_replace /
  insert / undo_edit on files inside the working copy;
- ``submit()``: end the episode; the task's tests decide the reward.

Tool-call format (the one Qwen3-Coder models emit; one call per action;
text before the call, e.g. reasoning, is ignored)::

    <function=execute_bash>
    <parameter=command>ls -la</parameter>
    </function>

An optional ``<tool_call>...</tool_call>`` wrapper is accepted. One newline
right after ``<parameter=NAME>`` and one right before ``</parameter>`` are
not part of the value. A closing ``</function>`` missing at the very end of
the text (cut by a stop sequence) is tolerated. Anything malformed yields an
error message, never an exception.
"""
from __future__ import annotations

import dataclasses
import os
import re

from crl_jax.envs.swe.sandbox import CommandResult

# name -> (required parameters, optional parameters)
TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "execute_bash": (("command",), ()),
    "str_replace_editor": (("command", "path"),
                           ("file_text", "old_str", "new_str", "insert_line", "view_range")),
    "submit": ((), ()),
}
EDITOR_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")

TOOL_INSTRUCTIONS = """\
Tools (call exactly one per turn):
- execute_bash(command): run a shell command in the repository (no network).
- str_replace_editor(command, path, ...): command is one of
    view [view_range="[start, end]"]   show a file with line numbers, or list a directory
    create file_text=...               create a new file
    str_replace old_str=... new_str=... replace text that occurs exactly once
    insert insert_line=N new_str=...   insert text after line N (0 = at the top)
    undo_edit                          revert the last edit of that file
  paths are relative to the repository root (or absolute inside it).
- submit(): finish; the repository's tests decide whether the issue is fixed.
Call format:
<function=execute_bash>
<parameter=command>python -m unittest -q</parameter>
</function>"""

_FUNC_OPEN = re.compile(r"<function=([^>]*)>")
_FUNC = re.compile(r"<function=([^>]*)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAM = re.compile(r"<parameter=([^>]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)


class ToolError(Exception):
    """A tool call that could not be carried out; its message is the observation."""


@dataclasses.dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict


def _strip_one_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def parse_tool_call(text) -> tuple[ToolCall | None, str]:
    """(ToolCall, "") for one well-formed call, else (None, error message)."""
    if not isinstance(text, str):
        return None, f"Error: the action must be text, got {type(text).__name__}."
    opened = _FUNC_OPEN.findall(text)
    if not opened:
        return None, ("Error: no tool call found. Call one tool, e.g.\n"
                      "<function=execute_bash>\n<parameter=command>ls</parameter>\n</function>")
    if len(opened) > 1:
        return None, f"Error: found {len(opened)} tool calls; make exactly one call per turn."
    match = _FUNC.search(text)
    name, body = match.group(1).strip(), match.group(2)
    if name not in TOOLS:
        return None, f"Error: unknown tool {name!r}; valid tools: {', '.join(TOOLS)}."
    args: dict[str, str] = {}
    for key, value in _PARAM.findall(body):
        key = key.strip()
        if key in args:
            return None, f"Error: parameter {key!r} given twice."
        args[key] = _strip_one_newline(value)
    leftover = _PARAM.sub("", body).strip()
    if leftover:
        return None, (f"Error: text inside <function={name}> outside any <parameter=...>: "
                      f"{leftover[:80]!r}.")
    required, optional = TOOLS[name]
    unknown = set(args) - set(required) - set(optional)
    if unknown:
        return None, (f"Error: {name} has no parameter(s) {sorted(unknown)}; "
                      f"valid: {list(required + optional)}.")
    missing = [k for k in required if k not in args]
    if missing:
        return None, f"Error: {name} needs parameter(s) {missing}."
    return ToolCall(name, args), ""


def format_tool_call(name: str, **args) -> str:
    """The text of one call in the documented format (used by the expert)."""
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
    return f"<function={name}>\n{params}</function>"


def format_command_result(res: CommandResult, max_chars: int) -> str:
    """A bash observation: the output (head and tail kept when too long) and
    how the command ended."""
    out = res.output
    if len(out) > max_chars:
        half = max_chars // 2
        out = (out[:half] + f"\n[... {len(out) - 2 * half} characters omitted ...]\n"
               + out[-half:])
    if res.timed_out:
        status = "[command timed out and was killed]"
    elif res.truncated:
        status = f"[output exceeded the cap ({res.output_bytes}+ bytes); command was killed]"
    else:
        status = f"[exit code: {res.exit_code}]"
    return f"{out.rstrip()}\n{status}" if out.strip() else status


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, start))


class FileEditor:
    """str_replace_editor over one working copy; keeps an undo history."""

    def __init__(self, root: str, max_view_chars: int = 16000):
        self.root = os.path.realpath(root)
        self.max_view_chars = max_view_chars
        self._history: dict[str, list[str | None]] = {}

    def resolve(self, path: str) -> str:
        """The real path of ``path``; ToolError if it is outside the working
        copy (``..`` escapes, absolute paths elsewhere, symlinks pointing out)."""
        if not path or "\x00" in path:
            raise ToolError("Error: path must be a non-empty path without NUL bytes.")
        full = path if os.path.isabs(path) else os.path.join(self.root, path)
        real = os.path.realpath(full)
        if os.path.commonpath([real, self.root]) != self.root:
            raise ToolError(f"Error: path {path!r} is outside the repository {self.root}.")
        return real

    def rel(self, real: str) -> str:
        return os.path.relpath(real, self.root)

    def __call__(self, command: str, path: str, **kw) -> str:
        if command not in EDITOR_COMMANDS:
            raise ToolError(f"Error: unknown command {command!r}; valid: {', '.join(EDITOR_COMMANDS)}.")
        allowed = {"view": {"view_range"}, "create": {"file_text"},
                   "str_replace": {"old_str", "new_str"}, "insert": {"insert_line", "new_str"},
                   "undo_edit": set()}[command]
        extra = set(kw) - allowed
        if extra:
            raise ToolError(f"Error: {command} does not take {sorted(extra)}.")
        real = self.resolve(path)
        return getattr(self, f"_{command}")(real, **kw)

    # -- commands -----------------------------------------------------
    def _view(self, real, view_range=None):
        if os.path.isdir(real):
            if view_range is not None:
                raise ToolError("Error: view_range applies to files, not directories.")
            return self._list_dir(real)
        text = self._read(real)
        lines = text.split("\n")
        start, end = 1, len(lines)
        if view_range is not None:
            nums = re.findall(r"-?\d+", view_range)
            if len(nums) != 2:
                raise ToolError(f"Error: view_range must be two integers like [1, 20], got {view_range!r}.")
            start, end = int(nums[0]), int(nums[1])
            end = len(lines) if end == -1 else min(end, len(lines))
            if not 1 <= start <= len(lines) or end < start:
                raise ToolError(f"Error: view_range {view_range!r} is invalid for a file of "
                                f"{len(lines)} lines (start in [1, {len(lines)}], end >= start or -1).")
        body = _numbered(lines[start - 1:end], start)
        if len(body) > self.max_view_chars:
            body = body[:self.max_view_chars] + "\n[... file view truncated; use view_range ...]"
        return f"Contents of {self.rel(real)} (cat -n):\n{body}"

    def _list_dir(self, real):
        entries = []
        for dirpath, dirnames, filenames in os.walk(real):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                 and d != "__pycache__")
            entries += [self.rel(os.path.join(dirpath, d)) + "/" for d in dirnames]
            if dirpath != real:  # the directory and one level below it
                dirnames[:] = []
            entries += [self.rel(os.path.join(dirpath, f)) for f in sorted(filenames)
                        if not f.startswith(".")]
        return f"Files in {self.rel(real)} (2 levels, hidden excluded):\n" + "\n".join(sorted(entries))

    def _create(self, real, file_text=None):
        if file_text is None:
            raise ToolError("Error: create needs file_text.")
        if os.path.exists(real):
            raise ToolError(f"Error: {self.rel(real)} already exists; use str_replace or insert to edit it.")
        os.makedirs(os.path.dirname(real), exist_ok=True)
        self._write(real, file_text, previous=None)
        return f"Created {self.rel(real)} ({len(file_text.splitlines())} lines)."

    def _str_replace(self, real, old_str=None, new_str=""):
        if not old_str:
            raise ToolError("Error: str_replace needs a non-empty old_str.")
        text = self._read(real)
        count = text.count(old_str)
        if count == 0:
            raise ToolError(f"Error: no replacement made: old_str does not occur verbatim in "
                            f"{self.rel(real)} (check whitespace and indentation).")
        if count > 1:
            lines = [text[:m.start()].count("\n") + 1 for m in re.finditer(re.escape(old_str), text)]
            raise ToolError(f"Error: no replacement made: old_str occurs {count} times in "
                            f"{self.rel(real)} (lines {lines}); include more context to make it unique.")
        at = text.index(old_str)
        self._write(real, text.replace(old_str, new_str), previous=text)
        first = text[:at].count("\n") + 1
        return self._snippet(real, first, first + new_str.count("\n"), "Edited")

    def _insert(self, real, insert_line=None, new_str=None):
        if insert_line is None or new_str is None:
            raise ToolError("Error: insert needs insert_line and new_str.")
        try:
            after = int(str(insert_line).strip())
        except ValueError:
            raise ToolError(f"Error: insert_line must be an integer, got {insert_line!r}.") from None
        text = self._read(real)
        lines = text.split("\n")
        if not 0 <= after <= len(lines):
            raise ToolError(f"Error: insert_line {after} is outside [0, {len(lines)}].")
        new_lines = new_str.split("\n")
        self._write(real, "\n".join(lines[:after] + new_lines + lines[after:]), previous=text)
        return self._snippet(real, after + 1, after + len(new_lines), "Inserted into")

    def _undo_edit(self, real):
        stack = self._history.get(real)
        if not stack:
            raise ToolError(f"Error: no edit of {self.rel(real)} to undo.")
        previous = stack.pop()
        if previous is None:
            os.remove(real)
            return f"Undid the creation of {self.rel(real)}."
        with open(real, "w", encoding="utf-8") as f:
            f.write(previous)
        return f"Reverted the last edit of {self.rel(real)}."

    # -- helpers ------------------------------------------------------
    def _read(self, real) -> str:
        if not os.path.isfile(real):
            raise ToolError(f"Error: {self.rel(real)} is not a file.")
        with open(real, encoding="utf-8", errors="replace") as f:
            return f.read()

    def _write(self, real, text, previous):
        with open(real, "w", encoding="utf-8") as f:
            f.write(text)
        self._history.setdefault(real, []).append(previous)

    def _snippet(self, real, first, last, verb, context=4):
        lines = self._read(real).split("\n")
        lo, hi = max(1, first - context), min(len(lines), last + context)
        return (f"{verb} {self.rel(real)}. Lines {lo}-{hi} now read:\n"
                f"{_numbered(lines[lo - 1:hi], lo)}\nReview the change; edit again if needed.")
