"""The manager's background track: consolidation, periodic merge, search-and-ask.

Each function runs on a manager background thread and takes the manager as
its first argument. The extractor and the merge decision are injected
callables (the real extractor model comes with the trainer); malformed output
is counted and skipped, never raised into the training loop.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.embedders import embed_checked
from crl_jax.experience.entries import AddEntry, DeleteEntry, Entry, UpdateEntry
from crl_jax.experience.operations import (AddOperation, UpdateOperation, index_text, parse_operations,
                                             parse_rewrite, query_text, rejection_kind, shown_text,
                                             structured_text)


@dataclasses.dataclass(frozen=True)
class EpisodeRecord:
    """A finished episode, queued for consolidation."""

    goal: str
    trajectory: str
    success: bool
    task_key: str = ""
    guiding_entry_id: int | None = None
    step: int = 0
    asked_sample_keys: tuple[str, ...] = ()  # search-and-ask exchanges made during the episode
    # What the outcome is measured against when it credits the entry that
    # guided it: 0 (paper Eq. 3's r(m)) or, with controls.reward_baseline=
    # "free", the mean +1/-1 outcome of the free episodes of the same task
    # in the same step (so r(m) says whether the entry helped, not whether
    # the game was easy).
    outcome_baseline: float = 0.0
    # Actor-Critic variant (paper App. B): the actor judged the guiding entry,
    # and this is the entry's credit (crl_jax/rl/critic.py critic_credit;
    # None: the verdict was unreadable and the entry gets no credit).
    judged: bool = False
    judged_credit: float | None = None
    room: str = ""  # households: the receptacles the episode's room lists


@dataclasses.dataclass(frozen=True)
class ExtractionRequest:
    """What the extractor is asked. Operation indices refer to positions in `shown_entries`."""

    kind: str  # "consolidate" or "ask"
    shown_entries: tuple[Entry, ...]
    goal: str = ""
    trajectory: str = ""
    success: bool | None = None
    query: str = ""
    room: str = ""  # households: the receptacles the episode's room lists


@dataclasses.dataclass(frozen=True)
class ExtractorReply:
    prompt: str  # the rendered prompt (kept as extractor training data)
    response: str


Extractor = Callable[[ExtractionRequest], ExtractorReply]
Merger = Callable[[list[str]], list[str]]  # window texts -> texts to keep (exact copies keep the entry)


@dataclasses.dataclass(frozen=True)
class ConsolidationReport:
    sample_key: str | None
    added_ids: tuple[int, ...] = ()
    updated_ids: tuple[int, ...] = ()
    deleted_ids: tuple[int, ...] = ()
    rejected: tuple[str, ...] = ()
    version: int | None = None


@dataclasses.dataclass(frozen=True)
class MergeReport:
    task_key: str
    calls: int
    kept_ids: tuple[int, ...] = ()
    added_ids: tuple[int, ...] = ()
    deleted_ids: tuple[int, ...] = ()
    rejected: tuple[str, ...] = ()
    version: int | None = None


@dataclasses.dataclass(frozen=True)
class AskResult:
    text: str | None  # the rewritten entry for the actor (None: the bank had nothing)
    entry: Entry | None
    sample_key: str | None


def _call_extractor(manager, request: ExtractionRequest) -> ExtractorReply:
    reply = manager.extractor(request)
    if not isinstance(reply, ExtractorReply):
        raise TypeError(f"the extractor must return ExtractorReply, got {type(reply).__name__}")
    manager.count("extractor_calls")
    return reply


def consolidate_episode(manager, record: EpisodeRecord) -> ConsolidationReport:
    config, bank = manager.config, manager.bank
    manager.count("episodes")
    snapshot = bank.snapshot
    guiding = snapshot.entries.get(record.guiding_entry_id) if record.guiding_entry_id is not None else None
    _credit_calls(manager, record, guiding)
    shown = [guiding] if guiding is not None else []
    if config.consolidation_context and len(snapshot):
        related = manager.search(query_text(record.goal, config.retrieval_key, room=record.room),
                                 record.task_key,
                                 k=config.consolidation_context,
                                 record=False).result(timeout=config.thread_timeout_s)
        shown += [r.entry for r in related if guiding is None or r.entry.id != guiding.id]
    shown = shown[:1 + config.consolidation_context]
    reply = _call_extractor(manager, ExtractionRequest("consolidate", tuple(shown), record.goal,
                                                       record.trajectory, record.success,
                                                       room=record.room))
    writes, rejected = _planned_writes(reply.response, shown, config, record.room)
    manager.count("ops_rejected", len(rejected))
    manager.count("calls_malformed", 1 if rejected else 0)
    for reason in rejected:
        manager.count(f"rejected_{rejection_kind(reason)}")
    if not writes:
        return ConsolidationReport(None, rejected=tuple(rejected))
    key = manager.sample_key("consolidate", record.step)
    ops, updated, deleted = _bank_operations(manager, record, reply, writes, key)
    try:
        receipt = bank.apply(ops)
    except ValueError as exc:  # e.g. an entry evicted since it was shown
        manager.count("bank_rejections")
        return ConsolidationReport(None, rejected=tuple(rejected + [f"bank rejected the operations: {exc}"]))
    manager.count("ops_applied", len(writes))
    manager.training_buffer.add_sample(key, reply.prompt, reply.response, record.step, "consolidate",
                                       receipt.added_ids + tuple(updated))
    return ConsolidationReport(key, receipt.added_ids, tuple(updated), tuple(deleted), tuple(rejected),
                               receipt.version)


def _credit_calls(manager, record: EpisodeRecord, guiding: Entry | None) -> None:
    """r(m): the episode's outcome goes to the extractor call that wrote the
    guiding entry (or the actor's verdict on it, when judged) and to the
    search-and-ask calls the episode made."""
    if guiding is not None:
        if not record.judged:
            manager.training_buffer.credit(guiding.source_call, record.success,
                                           record.outcome_baseline)
        elif record.judged_credit is not None:
            manager.training_buffer.credit_value(guiding.source_call, record.judged_credit)
    for key in record.asked_sample_keys:
        manager.training_buffer.credit(key, record.success, record.outcome_baseline)


def _planned_writes(response: str, shown: list[Entry], config: ExperienceConfig, room: str = ""
                    ) -> tuple[list[tuple[AddOperation | UpdateOperation, list[int]]], list[str]]:
    """The extractor's operations to apply, each with the ids of the shown
    entries it rewrites, and the reasons for those rejected (malformed, or an
    update of an entry an earlier operation of this call already changed).
    With lesson_room="episode", lessons are filed under the episode's ``room``."""
    parsed = parse_operations(response, len(shown), config.max_ops_per_call, config.max_entry_chars,
                              config.entry_format == "title_content")
    rejected = list(parsed.rejected)
    writes = []
    used_ids: set[int] = set()
    for op in parsed.operations:
        if config.lesson_room == "episode" and isinstance(op, (AddOperation, UpdateOperation)):
            from crl_jax.envs.alfworld_lessons import about_room  # ALFWorld households' lessons
            op = dataclasses.replace(op, text=about_room(op.text, room))
        if isinstance(op, UpdateOperation):
            ids = [shown[i].id for i in op.indices]
            if used_ids & set(ids):
                rejected.append(f"update {list(op.indices)}: entries already changed by this call")
                continue
            used_ids.update(ids)
            writes.append((op, ids))
        elif isinstance(op, AddOperation):
            writes.append((op, []))
    return writes, rejected


def _bank_operations(manager, record: EpisodeRecord, reply: ExtractorReply,
                     writes: list[tuple[AddOperation | UpdateOperation, list[int]]], key: str
                     ) -> tuple[list[AddEntry | UpdateEntry | DeleteEntry], list[int], list[int]]:
    """The bank operations of the planned writes (their texts embedded in one
    call), with the ids they update and delete."""
    config = manager.config
    vectors = embed_checked(manager.embedder, [index_text(op.text, config.retrieval_key)
                                               for op, _ in writes])
    ops, updated, deleted = [], [], []
    for (op, ids), vector in zip(writes, vectors):
        if isinstance(op, AddOperation):
            ops.append(AddEntry(record.task_key, op.text, vector, record.step, reply.prompt, reply.response, key))
        else:  # Update(indices, entry): the first entry takes the new text, the others merge into it
            ops.append(UpdateEntry(ids[0], op.text, vector, reply.prompt, reply.response, key))
            ops += [DeleteEntry(i) for i in ids[1:]]
            updated.append(ids[0])
            deleted += ids[1:]
    return ops, updated, deleted


def _valid_merge_output(output, max_chars: int, structured: bool = False) -> bool:
    return isinstance(output, list) and all(
        isinstance(t, str) and t.strip() and len(t) <= max_chars
        and (not structured or structured_text(t) is not None) for t in output)


def _merge_output(output, window_size: int) -> tuple[list | None, list[tuple[int, ...]] | None]:
    """A merger's texts, and which window inputs each states where the
    merger says ((text, indices) pairs, as alfworld_lesson_merge does with
    ``sources``); None for sources it does not give, None for texts where
    the pairs are malformed."""
    if not (isinstance(output, list) and output and all(isinstance(o, tuple) for o in output)):
        return output, None
    if not all(len(o) == 2 and all(isinstance(i, int) and 0 <= i < window_size for i in o[1])
               for o in output):
        return None, None
    return [text for text, _ in output], [tuple(indices) for _, indices in output]


def _merge_window(manager, window: list) -> tuple[list | None, str | None]:
    """One merger call on ``window`` ((text, entry id or None for a new
    text, the samples it credits) items): the items to keep, or None and
    why the output was rejected."""
    config = manager.config
    output, sources = _merge_output(manager.merger([text for text, _, _ in window]), len(window))
    manager.count("merge_calls")
    if not _valid_merge_output(output, config.max_entry_chars, config.entry_format == "title_content"):
        return None, (f"output must be a list of non-empty strings of at most "
                      f"{config.max_entry_chars} characters (entry_format={config.entry_format}); "
                      f"chunk kept unchanged")
    ids_by_text: dict[str, list] = {}
    for text, entry_id, _ in window:
        ids_by_text.setdefault(text, []).append(entry_id)
    credited = ([tuple(dict.fromkeys(k for i in indices for k in window[i][2])) for indices in sources]
                if sources else [()] * len(output))
    return [(text, ids_by_text[text].pop(0) if ids_by_text.get(text) else None, keys)
            for text, keys in zip(output, credited)], None


def _merge_windows(manager, entries) -> tuple[list, list[str], int]:
    """The merge's chunks in order, each merged with the last outputs of the
    one before carried in: the items to commit, the rejections, the calls."""
    config, buffer = manager.config, manager.training_buffer
    carry: list[tuple[str, int | None, tuple[str, ...]]] = []
    committed: list[tuple[str, int | None, tuple[str, ...]]] = []
    rejected, calls = [], 0
    for start in range(0, len(entries), config.merge_chunk):
        window = carry + [(e.text, e.id, (e.source_call,) if buffer.is_sample(e.source_call) else ())
                          for e in entries[start:start + config.merge_chunk]]
        calls += 1
        items, why = _merge_window(manager, window)
        if items is None:
            rejected.append(f"merge call {calls}: {why}")
            items = window
        if start + config.merge_chunk >= len(entries):
            committed += items
            carry = []
        else:
            split = max(0, len(items) - config.merge_carry)
            committed += items[:split]
            carry = items[split:]
    return committed, rejected, calls


def merge_task(manager, task_key: str, step: int) -> MergeReport:
    """Periodic merge over one task key's entries, in chunks, carrying the last outputs forward.

    The merger sees carried texts + the next chunk and returns the texts to
    keep. An output identical to an input keeps that entry (id, statistics);
    other outputs become new entries; inputs not kept are deleted. The whole
    merge is applied as one bank request (one publish). With
    experience.bank.merge_credit=sources, a new entry credits the extractor
    samples that wrote the inputs it states (not those an earlier merge
    folded into them): training_buffer.share_credit.
    """
    config, bank = manager.config, manager.bank
    entries = bank.snapshot.task_entries(task_key)
    if len(entries) < 2:
        return MergeReport(task_key, 0)
    committed, rejected, calls = _merge_windows(manager, entries)
    manager.count("ops_rejected", len(rejected))
    kept = [entry_id for _, entry_id, _ in committed if entry_id is not None]
    kept_set = set(kept)
    deleted = [e.id for e in entries if e.id not in kept_set]
    new = [(text, keys) for text, entry_id, keys in committed if entry_id is None]
    vectors = (embed_checked(manager.embedder, [index_text(t, config.retrieval_key) for t, _ in new])
               if new else np.zeros((0, bank.dim), np.float32))
    ops = [DeleteEntry(i) for i in deleted] + [
        AddEntry(task_key, t, v, step, source_call=_credit_group(manager, keys, step))
        for (t, keys), v in zip(new, vectors)]
    if not ops:
        return MergeReport(task_key, calls, tuple(kept), rejected=tuple(rejected))
    try:
        receipt = bank.apply(ops)
    except ValueError as exc:  # the bank changed under the merge (eviction): skip this round
        manager.count("bank_rejections")
        return MergeReport(task_key, calls, rejected=tuple(rejected + [f"bank rejected the merge: {exc}"]))
    return MergeReport(task_key, calls, tuple(kept), receipt.added_ids, tuple(deleted), tuple(rejected),
                       receipt.version)


def _credit_group(manager, keys: tuple[str, ...], step: int) -> str | None:
    """The credit group a merged entry keys (experience.bank.merge_credit=
    sources), or None: the paper's merged entry credits no sample."""
    if manager.config.merge_credit != "sources" or not keys:
        return None
    group = manager.sample_key("merge", step)
    manager.training_buffer.share_credit(group, keys)
    return group


def search_and_ask(manager, query: str, task_key: str, step: int) -> AskResult:
    """Best entry for an actor's mid-episode query, rewritten by the extractor for the situation."""
    config = manager.config
    manager.count("asks")
    hits = manager.search(query, task_key, k=1).result(timeout=config.thread_timeout_s)
    if not hits:
        return AskResult(None, None, None)
    best = hits[0].entry
    reply = _call_extractor(manager, ExtractionRequest("ask", (best,), query=query))
    text = parse_rewrite(reply.response, config.max_entry_chars)
    if text is None:  # unusable rewrite: the actor still gets the entry as stored
        manager.count("calls_malformed")
        return AskResult(shown_text(best.text), best, None)
    key = manager.sample_key("ask", step)
    manager.training_buffer.add_sample(key, reply.prompt, reply.response, step, "ask", (best.id,))
    return AskResult(text, best, key)
