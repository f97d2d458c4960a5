"""The experience bank: one writer thread owns all mutation and publishes snapshots.

Readers call `bank.reader(slot).search(...)` (no lock on that path) or read
`bank.snapshot`. Writes go through `submit(ops)`, which returns a future that
resolves with a PublishReceipt once the change is visible to readers. Each
request is applied all-or-nothing: an invalid operation fails that request's
future with ValueError and leaves the bank unchanged. Usage events from readers
travel on a SimpleQueue and are folded into the next snapshot.

A failure inside the writer thread is kept, fails every pending future, and is
raised by `check()` / `close()`; it is never swallowed.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import queue
import threading
import time

from crl_jax.experience import persistence
from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.entries import (AddEntry, DeleteEntry, Entry, EntryStats, MarkTrained,
                                        PublishReceipt, UpdateEntry, frozen_vector)
from crl_jax.experience.delta_store import DeltaStore
from crl_jax.experience.snapshot import CopyingStore, Snapshot, SnapshotReader

_STOP = object()
_MAX_REQUESTS_PER_PUBLISH = 256


class BankFailedError(RuntimeError):
    """The writer thread died; the original exception is the __cause__."""


class BankClosedError(RuntimeError):
    """The bank was closed before the request could be applied."""


@dataclasses.dataclass
class _Request:
    ops: tuple
    future: concurrent.futures.Future
    replace_with: persistence.BankState | None = None
    compact: str | None = None  # "wait" or "start" (bank.compact)


class ExperienceBank:
    def __init__(self, config: ExperienceConfig, dim: int, reader_slots: int | None = None):
        if dim < 1:
            raise ValueError(f"embedding dim must be >= 1, got {dim}")
        self.config = config
        self.dim = dim
        self.reader_slots = config.workers if reader_slots is None else reader_slots
        if self.reader_slots < 1:
            raise ValueError(f"reader_slots must be >= 1, got {self.reader_slots}")
        self._published = Snapshot.empty(config.per_task)
        self._readers = tuple(SnapshotReader(self, s) for s in range(self.reader_slots))
        if config.publish_mode == "delta":
            self._store = DeltaStore(config, dim, self.reader_slots, on_merged=self._wake_writer)
        else:
            self._store = CopyingStore(config, dim, self.reader_slots, self._wait_for_readers)
        self._oldest = 0  # FIFO eviction cursor: no live id is below it
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._usage: queue.SimpleQueue = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._closing = False
        self._drain_lock = threading.Lock()
        self.publish_seconds: list[float] = []  # writer-side cost of each publish (benchmark)
        self._thread = threading.Thread(target=self._run, name="crl-bank-writer", daemon=True)
        self._thread.start()

    # ----- read side ---------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        return self._published

    def reader(self, slot: int) -> SnapshotReader:
        if not 0 <= slot < self.reader_slots:
            raise ValueError(f"reader slot must be in [0, {self.reader_slots}), got {slot}")
        return self._readers[slot]

    def record_retrievals(self, entry_ids, when: float) -> None:
        """Usage events from readers; folded into c(m) and last retrieval time at the next publish."""
        for entry_id in entry_ids:
            self._usage.put((int(entry_id), float(when)))

    # ----- write side --------------------------------------------------------------------
    def submit(self, ops) -> concurrent.futures.Future:
        return self._enqueue(_Request(tuple(ops), concurrent.futures.Future()))

    def apply(self, ops, timeout: float | None = None) -> PublishReceipt:
        return self.submit(ops).result(timeout=self.config.thread_timeout_s if timeout is None else timeout)

    def flush(self, timeout: float | None = None) -> PublishReceipt:
        """Force a publish now (folds pending usage events); returns once it is visible."""
        return self.apply((), timeout)

    def save(self, path: str | os.PathLike) -> None:
        """Atomically save the current snapshot (entries, embeddings, statistics)."""
        persistence.save_snapshot(self._published, path, self.dim)

    def restore(self, path: str | os.PathLike, timeout: float | None = None) -> PublishReceipt:
        """Replace the whole bank by a saved one (through the writer); versions keep growing."""
        state = persistence.load_state(path, self.dim)
        future = self._enqueue(_Request((), concurrent.futures.Future(), replace_with=state))
        return future.result(timeout=self.config.thread_timeout_s if timeout is None else timeout)

    def bulk_load(self, ops, timeout: float | None = None) -> PublishReceipt:
        """Add many entries in one publish (usearch builds the graph with all cores)."""
        return self.apply(ops, timeout)

    def compact(self, timeout: float | None = None, wait: bool = True) -> PublishReceipt:
        """Delta mode: fold every delta layer into a new base now and publish it
        (the merger does this on its own in the background; tests and benchmarks
        use this to start from a settled bank). wait=False only starts that
        background merge. Other modes: a plain publish."""
        future = self._enqueue(_Request((), concurrent.futures.Future(), compact="wait" if wait else "start"))
        return future.result(timeout=self.config.thread_timeout_s if timeout is None else timeout)

    @property
    def merges(self) -> int:
        """Delta mode: how many background merges have been installed (0 in other modes)."""
        return self._store.merges

    def _wake_writer(self) -> None:
        """A merge finished: an empty request makes the writer install it soon, even when idle."""
        if not self._closing:
            self._requests.put(_Request((), concurrent.futures.Future()))

    def _enqueue(self, request: _Request) -> concurrent.futures.Future:
        self.check()
        if self._closing:
            raise BankClosedError("the bank is closed")
        self._requests.put(request)
        if not self._thread.is_alive():  # died or closed after our check: never leave a future hanging
            self._drain_pending()
        return request.future

    # ----- lifecycle ---------------------------------------------------------------------
    def check(self) -> None:
        """Raise BankFailedError if the writer thread has failed."""
        if self._failure is not None:
            raise BankFailedError(f"experience bank writer failed: {self._failure!r}") from self._failure

    raise_if_failed = check

    def close(self, timeout: float | None = None) -> None:
        """Stop the writer after the requests already queued; join it; surface any failure."""
        if not self._closing:
            self._closing = True
            self._requests.put(_STOP)
        self._thread.join(self.config.thread_timeout_s if timeout is None else timeout)
        if self._thread.is_alive():
            raise TimeoutError("experience bank writer did not stop in time")
        self._store.close()
        self._drain_pending()
        self.check()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _drain_pending(self) -> None:
        with self._drain_lock:
            while True:
                try:
                    request = self._requests.get_nowait()
                except queue.Empty:
                    return
                if request is not _STOP and not request.future.done():
                    if self._failure is not None:
                        error = BankFailedError(f"experience bank writer failed: {self._failure!r}")
                        error.__cause__ = self._failure
                    else:
                        error = BankClosedError("the bank was closed")
                    request.future.set_exception(error)

    # ----- writer thread -----------------------------------------------------------------
    def _run(self) -> None:
        batch: list = []
        try:
            stop = False
            while not stop:
                try:
                    batch = [self._requests.get(timeout=self.config.stats_flush_s)]
                except queue.Empty:
                    batch = []
                while len(batch) < _MAX_REQUESTS_PER_PUBLISH:
                    try:
                        batch.append(self._requests.get_nowait())
                    except queue.Empty:
                        break
                stop = any(r is _STOP for r in batch)
                batch = [r for r in batch if r is not _STOP]
                group: list = []
                for request in batch:  # a restore or a compaction is a publish of its own
                    if request.replace_with is not None:
                        self._publish(group) if group else None
                        group = []
                        self._publish_replace(request)
                    elif request.compact:
                        self._publish(group) if group else None
                        group = []
                        self._store.compact(wait=request.compact == "wait")
                        self._publish([request])
                    else:
                        group.append(request)
                if group or (not self._usage.empty() and not stop):
                    self._publish(group)
                batch = []
        except BaseException as exc:  # noqa: BLE001 - kept and re-raised by check()
            self._failure = exc
            for request in batch:
                if not request.future.done():
                    error = BankFailedError(f"experience bank writer failed: {exc!r}")
                    error.__cause__ = exc
                    request.future.set_exception(error)
        finally:
            self._drain_pending()

    def _wait_for_readers(self, retired_version: int) -> None:
        """Grace period: return once no reader is pinned below `retired_version`."""
        deadline = time.monotonic() + self.config.grace_timeout_s
        while any((p := r.pinned) is not None and p < retired_version for r in self._readers):
            if time.monotonic() > deadline:
                raise TimeoutError(f"readers still pinned below version {retired_version} after "
                                   f"{self.config.grace_timeout_s} s")
            time.sleep(0.0001)

    def _apply_op(self, op, entries: dict, stats: dict, touched: dict, undo: list, added: list,
                  state: dict) -> None:
        def remember(entry_id):
            touched.setdefault(entry_id, entries.get(entry_id))
            undo.append((entry_id, entries.get(entry_id), stats.get(entry_id)))

        if isinstance(op, AddEntry):
            if not isinstance(op.text, str) or not op.text.strip():
                raise ValueError("AddEntry.text must be a non-empty string")
            entry_id = state["next_id"]
            state["next_id"] += 1
            remember(entry_id)
            entries[entry_id] = Entry(entry_id, str(op.task_key), op.text, frozen_vector(op.embedding, self.dim),
                                      op.created_step, op.source_prompt, op.source_response, op.source_call)
            stats[entry_id] = EntryStats()
            added.append(entry_id)
        elif isinstance(op, UpdateEntry):
            old = entries.get(op.entry_id)
            if old is None:
                raise ValueError(f"UpdateEntry: no entry with id {op.entry_id}")
            if not isinstance(op.text, str) or not op.text.strip():
                raise ValueError("UpdateEntry.text must be a non-empty string")
            remember(op.entry_id)
            entries[op.entry_id] = dataclasses.replace(
                old, text=op.text, embedding=frozen_vector(op.embedding, self.dim),
                source_prompt=old.source_prompt if op.source_prompt is None else op.source_prompt,
                source_response=old.source_response if op.source_response is None else op.source_response,
                source_call=old.source_call if op.source_call is None else op.source_call)
        elif isinstance(op, DeleteEntry):
            if op.entry_id not in entries:
                raise ValueError(f"DeleteEntry: no entry with id {op.entry_id}")
            remember(op.entry_id)
            state["dropped"] += stats.pop(op.entry_id).retrieval_count
            del entries[op.entry_id]
        elif isinstance(op, MarkTrained):
            for entry_id in op.entry_ids:  # entries evicted since the batch was drawn are skipped
                if entry_id in stats:
                    undo.append((entry_id, entries.get(entry_id), stats[entry_id]))
                    s = stats[entry_id]
                    stats[entry_id] = dataclasses.replace(s, train_count=s.train_count + 1,
                                                          last_trained_step=int(op.step))
        else:
            raise ValueError(f"unknown bank operation {type(op).__name__}; valid: AddEntry, UpdateEntry, "
                             f"DeleteEntry, MarkTrained")

    def _publish(self, requests: list) -> None:
        started = time.perf_counter()
        old = self._published
        entries, stats = self._store.working(old)
        state = {"next_id": old.next_id, "dropped": old.dropped_retrievals}
        touched: dict = {}
        acknowledged = []
        for request in requests:
            undo: list = []
            added: list = []
            saved_dropped = state["dropped"]
            try:
                for op in request.ops:
                    self._apply_op(op, entries, stats, touched, undo, added, state)
            except ValueError as exc:
                for entry_id, entry, stat in reversed(undo):  # all-or-nothing per request
                    if entry is None:
                        entries.pop(entry_id, None)
                        stats.pop(entry_id, None)
                    else:
                        entries[entry_id] = entry
                        stats[entry_id] = stat
                state["dropped"] = saved_dropped
                request.future.set_exception(exc)
                continue
            acknowledged.append((request, tuple(added)))
        folded = 0
        while True:
            try:
                entry_id, when = self._usage.get_nowait()
            except queue.Empty:
                break
            folded += 1
            s = stats.get(entry_id)
            if s is None:
                state["dropped"] += 1
            else:
                stats[entry_id] = dataclasses.replace(s, retrieval_count=s.retrieval_count + 1,
                                                      last_retrieval_time=max(s.last_retrieval_time, when))
        while len(entries) > self.config.cap:  # FIFO eviction: ids are handed out in increasing order
            while self._oldest not in entries:
                self._oldest += 1
            oldest = self._oldest
            touched.setdefault(oldest, entries[oldest])
            del entries[oldest]
            state["dropped"] += stats.pop(oldest).retrieval_count
        entries, stats, partitions = self._store.publish(old, entries, stats, touched, old.version + 1)
        self._published = Snapshot(old.version + 1, entries, stats, partitions, self.config.per_task,
                                   state["next_id"], old.retrievals_folded + folded, state["dropped"])
        self.publish_seconds.append(time.perf_counter() - started)
        for request, added in acknowledged:
            request.future.set_result(PublishReceipt(old.version + 1, added))

    def _publish_replace(self, request: _Request) -> None:
        state = request.replace_with
        old = self._published
        entries, stats, partitions = self._store.replace(old, state, old.version + 1)
        self._oldest = min(entries, default=state.next_id)
        self._published = Snapshot(old.version + 1, entries, stats, partitions, self.config.per_task,
                                   max(state.next_id, old.next_id), state.retrievals_folded,
                                   state.dropped_retrievals)
        request.future.set_result(PublishReceipt(old.version + 1, ()))
