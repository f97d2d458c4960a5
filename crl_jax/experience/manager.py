"""The experience manager: batched, cached, multi-worker retrieval with Eq. 6 re-ranking.

search(query) returns a future. One batcher thread collects queries (up to
batch_size, at most max_wait_s after the first), serves repeated queries from
an LRU cache, embeds the misses in one call, and spreads the batch over W
search workers; worker i searches bank reader slot i, i.e. its own usearch
Index object of the published snapshot. The background track (consolidation,
merge, search-and-ask, the extractor training buffer) lives in consolidation.py
and is reached through the same object.
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
from crl_jax.experience.diversification import StepClock, diversified_scores, select_top_k
from crl_jax.experience.embedders import Embedder, EmbeddingCache, embed_checked
from crl_jax.experience.entries import Entry

_STOP = object()


class ManagerFailedError(RuntimeError):
    """A background thread of the manager failed; the original exception is the __cause__."""


class ManagerClosedError(RuntimeError):
    """The manager was closed before the request was served."""


@dataclasses.dataclass(frozen=True)
class Retrieval:
    entry: Entry
    score: float  # Eq. 6 score
    similarity: float  # s_rank: cosine similarity of query and entry
    snapshot_version: int


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
                ids, similarity = keys[i][found], sims[i][found]
                stats = [snapshot.stats_of(int(e)) for e in ids]
                counts = np.array([s.retrieval_count for s in stats], dtype=np.float64)
                lasts = np.array([s.last_retrieval_time for s in stats], dtype=np.float64)
                window = self.config.recency_window
                scores = diversified_scores(similarity, counts, lasts, now, self.config.diversity_lambda,
                                            window)
                recent = (now - lasts) < window
                chosen = select_top_k(scores, query.k, recent, self.config.released_top1_shuffle,
                                      self.config.released_shuffle_prob, self._rngs[worker])
                result = [Retrieval(snapshot.entries[int(ids[j])], float(scores[j]), float(similarity[j]),
                                    snapshot.version) for j in chosen]
                if query.record:
                    recorded.extend(r.entry.id for r in result)
                query.future.set_result(result)
            if recorded:
                self.bank.record_retrievals(recorded, now)


class ExperienceManager:
    """The experience manager H: retrieval for the actor, and the background track.

    Background work (consolidation and merge on one thread, search-and-ask on
    another) returns futures. An exception there (the extractor crashed, a bug)
    is kept: the future carries it and check() raises ManagerFailedError, so the
    trainer can stop cleanly. Malformed extractor output is only counted.
    """

    def __init__(self, bank: ExperienceBank, embedder: Embedder, extractor=None, merger=None,
                 config: ExperienceConfig | None = None, clock: Callable[[], float] | None = None,
                 seed: int = 0):
        from crl_jax.experience.training_buffer import ExtractorTrainingBuffer
        self.config = bank.config if config is None else config
        self.bank, self.embedder, self.extractor, self.merger = bank, embedder, extractor, merger
        if clock is None:  # Eq. 6's clock: actor steps (set_actor_step) or the wall clock
            clock = StepClock() if self.config.recency_clock == "steps" else time.time
        self.clock = clock
        self.search_path = SearchPath(bank, embedder, self.config, clock, seed)
        self.training_buffer = ExtractorTrainingBuffer(self.config.train_batch_size, self.config.cooldown_delta,
                                                       self.config.reweight_alpha)
        self.failure: BaseException | None = None
        self._closed = False
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()
        self._inflight: set = set()
        self._background = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="crl-consolidate")
        self._asker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="crl-ask")

    def set_actor_step(self, step: int) -> None:
        """Advances Eq. 6's clock when it counts actor steps (no-op otherwise)."""
        if isinstance(self.clock, StepClock):
            self.clock.step = step

    # ----- retrieval ---------------------------------------------------------------------
    def search(self, query: str, task_key: str = "", k: int | None = None,
               record: bool = True) -> concurrent.futures.Future:
        """Future of the top-k entries for `query` after Eq. 6 re-ranking (records the retrievals)."""
        return self.search_path.search(query, task_key, k, record)

    def retrieve(self, query: str, task_key: str = "", k: int | None = None,
                 timeout: float | None = None) -> list[Retrieval]:
        return self.search(query, task_key, k).result(self.config.thread_timeout_s if timeout is None else timeout)

    # ----- background track --------------------------------------------------------------
    def submit_episode(self, record) -> concurrent.futures.Future:
        """Queue a finished episode (consolidation.EpisodeRecord) for the extractor."""
        from crl_jax.experience import consolidation
        self._require(self.extractor, "an extractor")
        return self._run(self._background, consolidation.consolidate_episode, record)

    def merge(self, task_key: str = "", step: int = 0) -> concurrent.futures.Future:
        """Periodic merge of one task key's entries (future of a MergeReport)."""
        from crl_jax.experience import consolidation
        self._require(self.merger, "a merger")
        return self._run(self._background, consolidation.merge_task, task_key, step)

    def search_and_ask(self, query: str, task_key: str = "", step: int = 0) -> concurrent.futures.Future:
        from crl_jax.experience import consolidation
        self._require(self.extractor, "an extractor")
        return self._run(self._asker, consolidation.search_and_ask, query, task_key, step)

    def draw_training_batch(self, step: int):
        """An extractor training batch with Eq. 7 weights, or None; records c_train/t_last in the bank."""
        from crl_jax.experience.entries import MarkTrained
        self.check()
        items = self.training_buffer.draw(step)
        if items:
            ids = tuple(sorted({i for item in items for i in item.entry_ids}))
            self.bank.submit([MarkTrained(ids, step)])
        return items

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n

    @property
    def counters(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counters)

    def _require(self, thing, what: str) -> None:
        if thing is None:
            raise ValueError(f"this ExperienceManager was built without {what}")

    def _run(self, executor, fn, *args) -> concurrent.futures.Future:
        self.check()
        if self._closed:
            raise ManagerClosedError("the experience manager is closed")

        def task():
            try:
                return fn(self, *args)
            except BaseException as exc:
                if self.failure is None:
                    self.failure = exc
                raise

        future = executor.submit(task)
        with self._lock:
            self._inflight.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future) -> None:
        with self._lock:
            self._inflight.discard(future)

    # ----- lifecycle ---------------------------------------------------------------------
    def check(self) -> None:
        """Raise if any manager thread or the bank's writer has failed."""
        if self.failure is not None:
            raise ManagerFailedError(f"experience background task failed: {self.failure!r}") from self.failure
        self.search_path.check()
        self.bank.check()

    def close(self, timeout: float | None = None) -> None:
        """Cancel queued background work, wait for running work, stop the search threads."""
        timeout = self.config.thread_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        self._closed = True
        for executor in (self._background, self._asker):
            executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            running = list(self._inflight)
        _, not_done = concurrent.futures.wait(running, timeout=max(0.0, deadline - time.monotonic()))
        self.search_path.close(max(0.0, deadline - time.monotonic()))
        if not_done:
            raise TimeoutError(f"{len(not_done)} background task(s) did not finish in {timeout} s")
        self.check()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
