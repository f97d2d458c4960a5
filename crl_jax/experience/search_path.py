"""The threaded retrieval path: batched, cached, multi-worker search with Eq. 6 re-ranking.

search(query) returns a future. One batcher thread collects queries (up to
batch_size, at most max_wait_s after the first), serves repeated queries from
an LRU cache, embeds the misses in one call, and spreads the batch over W
search workers; worker i searches bank reader slot i, i.e. its own usearch
Index object of the published snapshot. The experience manager (manager.py)
owns one; the synchronous pipeline searches exactly instead (ranking.py).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import queue
import threading
import time
from typing import Callable

import numpy as np

from crl_jax.experience.bank import ExperienceBank
from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.embedders import Embedder, EmbeddingCache, embed_checked
from crl_jax.experience.ranking import rank_hits


_STOP = object()


class ManagerFailedError(RuntimeError):
    """A background thread of the manager failed; the original exception is the __cause__."""


class ManagerClosedError(RuntimeError):
    """The manager was closed before the request was served."""


@dataclasses.dataclass
class _Query:
    text: str
    task_key: str
    k: int
    record: bool
    future: concurrent.futures.Future


class SearchPath:
    """Batcher + W workers. Owned by ExperienceManager; usable alone for benchmarks."""

    def __init__(self, bank: ExperienceBank, embedder: Embedder, config: ExperienceConfig,
                 clock: Callable[[], float] = time.time, seed: int = 0):
        if bank.reader_slots < config.workers:
            raise ValueError(f"the bank has {bank.reader_slots} reader slots, fewer than {config.workers} workers")
        if embedder.dim != bank.dim:
            raise ValueError(f"embedder dim {embedder.dim} != bank dim {bank.dim}")
        self.bank, self.embedder, self.config, self.clock = bank, embedder, config, clock
        self.cache = EmbeddingCache(config.cache_size)
        self.embed_calls = 0
        self.batches: list[int] = []  # size of every dispatched batch (diagnostics)
        self.failure: BaseException | None = None
        self._closed = False
        self._queries: queue.SimpleQueue = queue.SimpleQueue()
        self._worker_queues = [queue.SimpleQueue() for _ in range(config.workers)]
        self._rngs = [np.random.default_rng([seed, w]) for w in range(config.workers)]
        self._threads = [threading.Thread(target=self._guard(self._batch_loop), name="crl-search-batcher",
                                          daemon=True)]
        self._threads += [threading.Thread(target=self._guard(self._worker_loop, w), name=f"crl-search-{w}",
                                           daemon=True) for w in range(config.workers)]
        for thread in self._threads:
            thread.start()

    def search(self, query: str, task_key: str = "", k: int | None = None,
               record: bool = True) -> concurrent.futures.Future:
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        k = self.config.top_k if k is None else k
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.check()
        if self._closed:
            raise ManagerClosedError("the experience manager is closed")
        item = _Query(query, str(task_key), k, record, concurrent.futures.Future())
        self._queries.put(item)
        return item.future

    def check(self) -> None:
        if self.failure is not None:
            raise ManagerFailedError(f"search thread failed: {self.failure!r}") from self.failure

    def close(self, timeout: float) -> None:
        self._closed = True
        self._queries.put(_STOP)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._fail_queued(ManagerClosedError("the experience manager was closed"))
        if any(t.is_alive() for t in self._threads):
            raise TimeoutError("search threads did not stop in time")

    # ----- threads -----------------------------------------------------------------------
    def _guard(self, loop, *args):
        def run():
            try:
                loop(*args)
            except BaseException as exc:  # noqa: BLE001 - surfaced through check() and the futures
                self.failure = exc
                self._closed = True
                error = ManagerFailedError(f"search thread failed: {exc!r}")
                error.__cause__ = exc
                self._fail_queued(error)
                for q in self._worker_queues:  # let the other threads exit
                    q.put(_STOP)
        return run

    def _fail_queued(self, error: BaseException) -> None:
        pending = []
        for q in [self._queries, *self._worker_queues]:
            while True:
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, _Query):
                    pending.append(item)
                elif isinstance(item, tuple):  # (queries, vectors) dispatched to a worker
                    pending.extend(item[0])
        for query in pending:
            if not query.future.done():
                query.future.set_exception(error)

    def _collect(self) -> list | None:
        first = self._queries.get()
        if first is _STOP:
            return None
        batch = [first]
        deadline = time.monotonic() + self.config.max_wait_s
        while len(batch) < self.config.batch_size:
            remaining = deadline - time.monotonic()
            try:
                item = self._queries.get_nowait() if remaining <= 0 else self._queries.get(timeout=remaining)
            except queue.Empty:
                break
            if item is _STOP:
                self._queries.put(_STOP)  # serve this batch, then stop
                break
            batch.append(item)
        return batch

    def _batch_loop(self) -> None:
        next_worker = 0
        while True:
            batch = self._collect()
            if batch is None:
                for q in self._worker_queues:
                    q.put(_STOP)
                return
            batch = [q for q in batch if q.future.set_running_or_notify_cancel()]
            if not batch:
                continue
            try:
                vectors = self._embed(batch)
            except Exception as exc:  # the callers get the embedder's error; the path keeps serving
                for query in batch:
                    query.future.set_exception(exc)
                continue
            self.batches.append(len(batch))
            chunks = np.array_split(np.arange(len(batch)), min(len(batch), self.config.workers))
            for rows in chunks:
                self._worker_queues[next_worker].put(([batch[r] for r in rows], vectors[rows]))
                next_worker = (next_worker + 1) % self.config.workers

    def _embed(self, batch: list[_Query]) -> np.ndarray:
        vectors = np.zeros((len(batch), self.bank.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for row, query in enumerate(batch):
            cached = self.cache.get(query.text)
            if cached is None:
                missing.setdefault(query.text, []).append(row)
            else:
                vectors[row] = cached
        if missing:
            texts = list(missing)
            self.embed_calls += 1
            embedded = embed_checked(self.embedder, texts)
            for text, vector in zip(texts, embedded):
                vectors[missing[text]] = vector
                self.cache.put(text, vector)
        return vectors

    def _worker_loop(self, worker: int) -> None:
        reader = self.bank.reader(worker)
        while True:
            item = self._worker_queues[worker].get()
            if item is _STOP:
                return
            queries, vectors = item
            try:
                self._serve(worker, reader, queries, vectors)
            except Exception as exc:  # per-batch failure goes to its callers
                for query in queries:
                    if not query.future.done():
                        query.future.set_exception(exc)

    def _serve(self, worker, reader, queries: list[_Query], vectors: np.ndarray) -> None:
        by_task: dict[str, list[int]] = {}
        for row, query in enumerate(queries):
            by_task.setdefault(query.task_key, []).append(row)
        for task_key, rows in by_task.items():
            # N*K candidates (K = the largest k asked in this group).
            pool = self.config.oversample_n * max(queries[r].k for r in rows)
            snapshot, keys, sims = reader.search(vectors[rows], pool, task_key)
            now = self.clock()
            recorded = []
            for i, row in enumerate(rows):
                query = queries[row]
                found = keys[i] >= 0
                result = rank_hits(snapshot, keys[i][found], sims[i][found], query.k, now,
                                   self.config, self._rngs[worker])
                if query.record:
                    recorded.extend(r.entry.id for r in result)
                query.future.set_result(result)
            if recorded:
                self.bank.record_retrievals(recorded, now)
