"""Parse the extractor's operations text into operation objects, tolerantly.

The extractor is asked to answer with JSON: a list of operations (or an object
with an "operations" list), each like

    {"operation": "add", "entry": {"title": "...", "content": "..."}}
    {"operation": "update", "indices": [0], "entry": "title\\ncontent"}
    {"operation": "return"}

The JSON may sit inside a ```json fence or after free text (a thinking model's
reasoning). Anything malformed (no JSON, unknown operation, indices out of
range, empty or oversized text, more than `max_ops` operations) is rejected
with a reason and skipped: parse_operations never raises on model output.
"""
from __future__ import annotations

import dataclasses
import json
import re

_OP_NAME_KEYS = ("operation", "op", "type", "action")
_INDEX_KEYS = ("indices", "index", "ids", "id")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class AddOperation:
    text: str


@dataclasses.dataclass(frozen=True)
class UpdateOperation:
    indices: tuple[int, ...]  # positions in the list of entries shown to the extractor
    text: str


@dataclasses.dataclass(frozen=True)
class ReturnOperation:
    """No change to the bank."""


Operation = AddOperation | UpdateOperation | ReturnOperation


@dataclasses.dataclass(frozen=True)
class ParseResult:
    operations: tuple[Operation, ...]
    rejected: tuple[str, ...]  # one human-readable reason per rejected item

    @property
    def malformed(self) -> bool:
        return bool(self.rejected)


def entry_text(entry) -> str:
    """Render an entry given as a string or {"title", "content"} (content may be a dict of sections)."""
    if isinstance(entry, str):
        return entry.strip()
    if isinstance(entry, dict):
        title = entry.get("title", "")
        content = entry.get("content", "")
        if isinstance(content, dict):
            content = "\n".join(f"{k}: {v}" for k, v in content.items() if isinstance(v, (str, int, float)))
        if not isinstance(title, str) or not isinstance(content, str):
            return ""
        return "\n".join(part.strip() for part in (title, content) if part.strip())
    return ""


_STRUCTURED = re.compile(r"^\s*<title>(.+?)</title>\s*<content>(.+?)</content>\s*$", re.DOTALL)


def structured_text(entry) -> str | None:
    """The released entry form "<title>T</title><content>C</content>" of an
    entry given as such a string or as {"title": T, "content": C}; None when
    it lacks a non-empty title or content."""
    if isinstance(entry, dict):
        title, content = entry.get("title"), entry.get("content")
        if isinstance(title, str) and isinstance(content, str) and title.strip() and content.strip():
            return f"<title>{title.strip()}</title><content>{content.strip()}</content>"
        return None
    if isinstance(entry, str):
        m = _STRUCTURED.match(entry)
        if m and m.group(1).strip() and m.group(2).strip():
            return entry.strip()
    return None


def entry_title(text: str) -> str:
    """What an entry says it is for: the title of the released form
    "<title>T</title><content>C</content>", else the text before the first
    ":" of this project's "goal: plan" entries, else the whole text."""
    m = _STRUCTURED.match(text)
    if m:
        return m.group(1).strip()
    head, sep, _ = text.partition(":")
    return head.strip() if sep and head.strip() else text.strip()


def index_text(text: str, retrieval_key: str) -> str:
    """The text an entry is embedded by (ExperienceConfig.retrieval_key)."""
    if retrieval_key == "lesson":
        from crl_jax.envs.alfworld_lessons import lesson_index  # ALFWorld households' lessons
        return lesson_index(text)
    return entry_title(text) if retrieval_key == "title" else text


def shown_text(text: str) -> str:
    """An entry's text as the actor and the extractor read it: a households
    lesson without the votes or evidence experience.merger=lesson_votes or
    lesson_evidence keeps in it."""
    if "(votes: " not in text and "(evidence: " not in text:
        return text
    from crl_jax.envs.alfworld_lessons import lesson_as_read
    return lesson_as_read(text)


def query_text(goal: str, retrieval_key: str, observation: str | None = None,
               room: str | None = None) -> str:
    """The text a search for ``goal``'s entries embeds: the goal alone when
    entries are found by their title; the goal's object and the room (given,
    or read from the episode's first ``observation``) when they are found as
    lessons; else "goal: g" (and ", observation: o", the paper's query at
    episode start, when there is an observation)."""
    if retrieval_key == "title":
        return goal.strip()
    if retrieval_key == "lesson":
        from crl_jax.envs.alfworld_lessons import lesson_query, room_line
        return lesson_query(goal, room if room is not None else room_line(observation or ""))
    return f"goal: {goal}" + (f", observation: {observation}" if observation is not None else "")


_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think>", re.IGNORECASE)


def _answer_part(text: str) -> str:
    """The part of a reply that holds the answer: the last <answer>...</answer>
    when there is one, else what follows the last </think>, else all of it.
    A thinking extractor (the paper's Qwen3-4B-Thinking) reasons first, and
    its reasoning may hold brackets that parse as JSON."""
    answers = _ANSWER.findall(text)
    if answers:
        return answers[-1]
    ends = list(_THINK_END.finditer(text))
    return text[ends[-1].end():] if ends else text


def _find_json(text: str):
    text = _answer_part(text)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            pass
        for start, char in enumerate(candidate):
            if char in "[{":
                try:
                    return decoder.raw_decode(candidate, start)[0]
                except (json.JSONDecodeError, RecursionError):
                    continue
    raise ValueError("no JSON operations found")


def _parse_one(item, n_shown: int, max_chars: int, structured: bool = False) -> Operation:
    if not isinstance(item, dict):
        raise ValueError(f"operation must be an object, got {type(item).__name__}")
    name = next((item[k] for k in _OP_NAME_KEYS if k in item), None)
    if not isinstance(name, str):
        raise ValueError("operation has no name (expected key 'operation')")
    name = name.strip().lower()
    if name in ("return", "none", "noop", "no_op", "skip"):
        return ReturnOperation()
    if name not in ("add", "update"):
        raise ValueError(f"unknown operation {name!r}; valid: add, update, return")
    raw_entry = item.get("entry", item.get("experience"))
    if raw_entry is None and ("title" in item or "content" in item):
        raw_entry = {"title": item.get("title", ""), "content": item.get("content", "")}
    text = entry_text(raw_entry)
    if not text:
        raise ValueError(f"{name}: empty or missing entry text")
    if structured:
        text = structured_text(raw_entry)
        if text is None:
            raise ValueError(f"{name}: the entry lacks a <title>...</title><content>...</content>")
    if len(text) > max_chars:
        raise ValueError(f"{name}: entry text has {len(text)} characters, more than the limit {max_chars}")
    if name == "add":
        return AddOperation(text)
    raw_indices = next((item[k] for k in _INDEX_KEYS if k in item), None)
    indices = raw_indices if isinstance(raw_indices, list) else [raw_indices]
    if not indices or any(not isinstance(i, int) or isinstance(i, bool) for i in indices):
        raise ValueError(f"update: indices must be a non-empty list of ints, got {raw_indices!r}")
    bad = [i for i in indices if not 0 <= i < n_shown]
    if bad:
        raise ValueError(f"update: indices {bad} out of range [0, {n_shown})")
    return UpdateOperation(tuple(dict.fromkeys(indices)), text)


def parse_operations(text, n_shown: int, max_ops: int = 3, max_chars: int = 4000,
                     structured: bool = False) -> ParseResult:
    """Parse extractor output. Never raises on bad model output; reports what it rejected.
    ``structured``: entries must have a title and a content (structured_text)."""
    if not isinstance(text, str):
        return ParseResult((), (f"extractor output is {type(text).__name__}, not text",))
    try:
        data = _find_json(text)
    except ValueError as exc:
        return ParseResult((), (str(exc),))
    if isinstance(data, dict) and isinstance(data.get("operations"), list):
        data = data["operations"]
    items = data if isinstance(data, list) else [data]
    operations, rejected = [], []
    for position, item in enumerate(items):
        if position >= max_ops:
            rejected.append(f"operation {position}: more than {max_ops} operations per call")
            continue
        try:
            operations.append(_parse_one(item, n_shown, max_chars, structured))
        except ValueError as exc:
            rejected.append(f"operation {position}: {exc}")
    return ParseResult(tuple(operations), tuple(rejected))


# What went wrong, by the words of the reasons above (first match wins): the
# manager counts rejections by kind, so a malformed rate can be read.
_REJECTION_KINDS = (("no JSON", "no_json"), ("not text", "no_json"),
                    ("operations per call", "too_many_ops"), ("indices", "bad_indices"),
                    ("already changed", "conflict"), ("bank rejected", "bank"),
                    ("entry", "bad_entry"), ("operation", "bad_operation"))


def rejection_kind(reason: str) -> str:
    """A rejected item's reason (ParseResult.rejected, or the consolidation's
    own) as one word: no_json, too_many_ops, bad_indices, conflict, bank,
    bad_entry (empty, oversized or unstructured text), bad_operation (not an
    object, no name, unknown name), or other."""
    return next((kind for words, kind in _REJECTION_KINDS if words in reason), "other")


def parse_rewrite(response, max_chars: int = 4000) -> str | None:
    """The entry text of a search-and-ask rewrite: JSON {"entry": ...}/{"title", "content"} or plain text.

    None when the response is empty, not text, or longer than `max_chars`.
    """
    if not isinstance(response, str):
        return None
    text = response.strip()
    try:
        data = _find_json(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        candidate = entry_text(data.get("entry", data))
        if candidate:
            text = candidate
    if not text or len(text) > max_chars:
        return None
    return text
