"""The experience bank benchmark's writers: the paper's design (one usearch index
behind a reader/writer lock) and the busy writer of a snapshot bank.

Both pick the ids they update and delete in O(1) (LiveIds): a 1M-entry bank
must not cost the benchmark's own writer O(bank) per batch, or the benchmark
would measure that.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from crl_jax.experience import AddEntry, DeleteEntry, UpdateEntry
from crl_jax.experience.snapshot import PartitionIndex, new_index


class ReadWriteLock:
    """Writer-preferring readers/writer lock (the paper's guard around M)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    def acquire_read(self):
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1

    def release_read(self):
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_write(self):
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True

    def release_write(self):
        with self._cond:
            self._writer = False
            self._cond.notify_all()


class LockedBank:
    """Baseline: one mutable usearch index, readers and the writer behind a RW lock."""

    def __init__(self, config, vectors, index=None):
        self.write_seconds: list[float] = []
        if index is None:
            index = new_index(config, vectors.shape[1])
            index.add(np.arange(len(vectors)), vectors)
        self.index = index
        self.lock = ReadWriteLock()
        # Same result post-processing as the snapshot readers, over the one shared index object.
        self.view = PartitionIndex((self.index,), len(vectors))
        self.live = LiveIds(range(len(vectors)))

    def search(self, queries, count):
        self.lock.acquire_read()
        try:
            return self.view.search(0, queries, count)
        finally:
            self.lock.release_read()

    def write(self, add_vectors, update_vectors, n_delete, rng):
        started = time.perf_counter()
        self.lock.acquire_write()
        try:
            updated = self.live.some(rng, len(update_vectors))
            self.index.add(self.live.add(len(add_vectors)), add_vectors)
            self.index.remove(updated)
            self.index.add(updated, update_vectors)
            self.index.remove(self.live.pop_oldest(n_delete))
        finally:
            self.lock.release_write()
            self.write_seconds.append(time.perf_counter() - started)


class LiveIds:
    """The writer's live ids, oldest first, with O(1) picks (a 1M-entry bank must
    not cost the benchmark's writer O(bank) per batch: that would be measured)."""

    def __init__(self, ids):
        self.ids = list(ids)
        self.head = 0
        self.next_key = max(self.ids) + 1 if self.ids else 0

    def add(self, n: int) -> np.ndarray:
        new = np.arange(self.next_key, self.next_key + n)
        self.next_key += n
        self.ids.extend(new.tolist())
        return new

    def some(self, rng, n: int) -> np.ndarray:
        """n distinct live ids, never among the next ones pop_oldest takes."""
        picks = rng.choice(len(self.ids) - self.head - 4, n, replace=False) + self.head + 4
        return np.asarray([self.ids[i] for i in picks])

    def pop_oldest(self, n: int) -> np.ndarray:
        self.head += n
        return np.asarray(self.ids[self.head - n:self.head])


def write_batch(rng, pool):
    return pool[rng.integers(len(pool), size=4)], pool[rng.integers(len(pool), size=2)]


class BankWriter:
    """The busy writer of a snapshot bank: 4 adds, 2 updates, 2 deletes (oldest) per batch."""

    def __init__(self, bank, pool):
        self.bank, self.pool = bank, pool
        self.live = LiveIds(bank.snapshot.entries)

    def __call__(self, rng):
        adds, updates = write_batch(rng, self.pool)
        ops = [UpdateEntry(int(i), "bench update", v) for i, v in zip(self.live.some(rng, 2), updates)]
        ops += [DeleteEntry(int(i)) for i in self.live.pop_oldest(2)]
        ops += [AddEntry("t", "bench entry", v) for v in adds]
        receipt = self.bank.apply(ops, timeout=120)
        self.live.ids.extend(receipt.added_ids)
