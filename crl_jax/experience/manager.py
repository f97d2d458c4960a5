"""The experience manager H: retrieval for the actor, and the background track.

Retrieval goes through the threaded search path (search_path.py) or, in the
synchronous pipeline (experience.sync), through the exact search
(ranking.py). The background track (consolidation, merge, search-and-ask,
the extractor training buffer) lives in consolidation.py and is reached
through the same object.
"""
from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Callable

from crl_jax.experience.bank import ExperienceBank
from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.diversification import StepClock
from crl_jax.experience.embedders import Embedder
from crl_jax.experience.ranking import ExactSearch, Retrieval
from crl_jax.experience.search_path import ManagerClosedError, ManagerFailedError, SearchPath

__all__ = ["ExperienceManager", "ManagerClosedError", "ManagerFailedError", "Retrieval"]


class ExperienceManager:
    """The experience manager H: retrieval for the actor, and the background track.

    Background work (consolidation and merge on one thread, search-and-ask on
    another) returns futures. An exception there (the extractor crashed, a bug)
    is kept: the future carries it and check() raises ManagerFailedError, so the
    trainer can stop cleanly. Malformed extractor output is only counted.
    """

    def __init__(self, bank: ExperienceBank, embedder: Embedder, extractor=None, merger=None,
                 config: ExperienceConfig | None = None, clock: Callable[[], float] | None = None,
                 seed: int = 0, synchronous: bool = False):
        from crl_jax.experience.training_buffer import ExtractorTrainingBuffer
        self.config = bank.config if config is None else config
        self.bank, self.embedder, self.extractor, self.merger = bank, embedder, extractor, merger
        if clock is None:  # Eq. 6's clock: actor steps (set_actor_step) or the wall clock
            clock = StepClock() if self.config.recency_clock == "steps" else time.time
        self.clock = clock
        self.search_path = SearchPath(bank, embedder, self.config, clock, seed)
        # experience.sync: exact retrieval in the caller's thread (ranking.py)
        self.exact = ExactSearch(bank, embedder, self.config, clock, seed) if synchronous else None
        self._keys_made = 0
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
        if self.exact is not None:
            return self.search_many([query], [task_key], k, record)[0]
        return self.search_path.search(query, task_key, k, record)

    def search_many(self, queries: list[str], task_keys: list[str], k: int | None = None,
                    record: bool = True) -> list[concurrent.futures.Future]:
        """Futures of several searches. Synchronous manager: ranked together
        against one snapshot, their retrievals recorded and published on
        return (futures already done)."""
        if len(queries) != len(task_keys):
            raise ValueError(f"{len(queries)} queries for {len(task_keys)} task keys")
        if self.exact is None:
            return [self.search_path.search(q, t, k, record) for q, t in zip(queries, task_keys)]
        self.check()
        if self._closed:
            raise ManagerClosedError("the experience manager is closed")
        if any(not isinstance(q, str) for q in queries):
            raise ValueError("queries must be str")
        futures = []
        for hits in self.exact.search(queries, task_keys, self.config.top_k if k is None else k,
                                      record):
            futures.append(concurrent.futures.Future())
            futures[-1].set_result(hits)
        return futures

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

    def sample_key(self, kind: str, step: int) -> str:
        """A new extractor sample's key: unique in the run (the count goes into
        checkpoints) and the same in every repeat of a synchronous run."""
        with self._lock:
            self._keys_made += 1
            return f"{kind}-s{step}-{self._keys_made}"

    def drain(self, timeout: float | None = None) -> None:
        """Return once every queued background task (consolidation, merge,
        ask) has finished and its writes are published: a quiescent point.

        ``timeout`` bounds the wait for *progress*, not for the whole queue: a
        step's 32 consolidations on a busy machine may take minutes, which is
        slow, not hung; only ``timeout`` seconds without any task finishing is
        an error."""
        timeout = self.config.thread_timeout_s if timeout is None else timeout
        while True:
            with self._lock:
                running = list(self._inflight)
            if not running:
                break
            done, not_done = concurrent.futures.wait(
                running, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                raise TimeoutError(f"{len(not_done)} background task(s) made no progress in "
                                   f"{timeout} s")
        self.check()
        self.bank.flush(timeout)

    def state_dict(self) -> dict:
        """What a checkpoint needs besides the bank: counters, the key count,
        the extractor buffer and the exact search's generator."""
        with self._lock:
            out = {"counters": dict(self._counters), "keys_made": self._keys_made}
        out["training_buffer"] = self.training_buffer.state_dict()
        if self.exact is not None:
            out["exact_search"] = self.exact.state_dict()
        return out

    def load_state_dict(self, state: dict) -> None:
        with self._lock:
            self._counters = dict(state.get("counters", {}))
            self._keys_made = int(state.get("keys_made", 0))
        self.training_buffer.load_state_dict(state["training_buffer"])
        if self.exact is not None and "exact_search" in state:
            self.exact.load_state_dict(state["exact_search"])

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
