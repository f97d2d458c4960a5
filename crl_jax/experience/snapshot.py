"""Immutable published snapshots, per-slot readers, and the copy and double-buffer
ways to publish (CopyingStore; the default, delta publishing, is delta_store.py).

usearch serialises the calls on one Index object (DESIGN.md, concurrency), so
every reader slot searches its own Index object and the writer never touches
an object that a reader may be using:

- CopyPublisher: the writer mutates a private master index, serialises it once
  per publish, and each reader slot maps a zero-copy view of those bytes.
  Old snapshots are freed by reference counting; no reader bookkeeping.
- DoubleBufferPublisher: two sets of per-slot indexes alternate. The writer
  waits (grace period) until no reader is pinned to a version that may still
  use the stale set, replays the previous batch on it, applies the new one and
  publishes it.

Both copy the entry and statistics maps at every publish: O(bank).
"""
from __future__ import annotations

import dataclasses
import types
from typing import Callable, Mapping

import numpy as np
from usearch.index import Index

from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.entries import Entry, EntryStats

ALL_TASKS = "*"  # partition key when the bank is not partitioned per task


def partition_of(task_key: str, per_task: bool) -> str:
    """The index partition an entry of ``task_key`` lives in."""
    return task_key if per_task else ALL_TASKS


def changes_by_partition(changes, per_task: bool) -> tuple[dict, dict]:
    """(removes, adds) per partition from (id, before, after) changes, before and
    after being entries or None: ids to drop from an index, entries to add. An
    entry that is still the same object is no change."""
    removes: dict = {}
    adds: dict = {}
    for entry_id, before, after in changes:
        if after is before:
            continue
        if before is not None:
            removes.setdefault(partition_of(before.task_key, per_task), []).append(entry_id)
        if after is not None:
            adds.setdefault(partition_of(after.task_key, per_task), []).append(after)
    return removes, adds
_EMPTY = types.MappingProxyType({})


def new_index(config: ExperienceConfig, dim: int) -> Index:
    # Cosine on L2-normalised vectors: similarity = 1 - distance.
    return Index(ndim=dim, metric="cos", dtype=config.index_dtype, connectivity=config.connectivity,
                 expansion_add=config.expansion_add, expansion_search=config.expansion_search)


class PartitionIndex:
    """Read-only search structures of one partition: one usearch Index per reader slot."""

    __slots__ = ("indexes", "size", "keepalive")

    def __init__(self, indexes: tuple[Index, ...], size: int, keepalive=None):
        self.indexes = indexes
        self.size = size
        self.keepalive = keepalive  # the serialised bytes the views map (copy and delta modes)

    def search(self, slot: int, vectors: np.ndarray, count: int, exact: bool = False):
        """Returns (keys [q, count] int64 with -1 padding, similarities [q, count] float32)."""
        n_queries = vectors.shape[0]
        keys = np.full((n_queries, count), -1, dtype=np.int64)
        sims = np.full((n_queries, count), -np.inf, dtype=np.float32)
        if self.size == 0 or n_queries == 0:
            return keys, sims
        found = self.indexes[slot].search(vectors, count, exact=exact, threads=1)
        if hasattr(found, "counts"):  # BatchMatches: rows padded beyond counts[row]
            found_keys, found_dist, counts = found.keys, found.distances, found.counts
        else:  # one query gives a Matches holding only the hits
            found_keys, found_dist = found.keys[None, :], found.distances[None, :]
            counts = [len(found.keys)]
        for row in range(n_queries):
            n = int(counts[row])
            keys[row, :n] = found_keys[row, :n]
            sims[row, :n] = 1.0 - np.asarray(found_dist[row, :n], dtype=np.float32)
        return keys, sims


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One published, immutable state of the bank. Never mutated after publication.

    The search structures of a snapshot are only valid while a SnapshotReader
    holds it pinned (double-buffer mode recycles them); entries and statistics
    stay valid for as long as anyone keeps the snapshot.
    """

    version: int
    entries: Mapping[int, Entry]
    stats: Mapping[int, EntryStats]
    partitions: Mapping[str, PartitionIndex]
    per_task: bool
    next_id: int = 0
    retrievals_folded: int = 0  # usage events folded into statistics, ever
    dropped_retrievals: int = 0  # of those, the ones whose entry is gone (deleted/evicted)

    @classmethod
    def empty(cls, per_task: bool) -> "Snapshot":
        return cls(0, _EMPTY, _EMPTY, _EMPTY, per_task)

    def partition_key(self, task_key: str) -> str:
        return partition_of(task_key, self.per_task)

    def __len__(self) -> int:
        return len(self.entries)

    def task_entries(self, task_key: str) -> list[Entry]:
        """Entries of one task key, oldest first."""
        return [e for e in self.entries.values() if e.task_key == task_key]

    def stats_of(self, entry_id: int) -> EntryStats:
        return self.stats.get(entry_id, EntryStats())


_PENDING = -1  # a reader that is about to read the published reference


class SnapshotReader:
    """Search access for one reader slot. Use each reader from one thread only.

    Pinning is two attribute writes (no lock): the writer in double-buffer mode
    waits until no reader is pinned below the version that retired a buffer.
    """

    def __init__(self, bank, slot: int):
        self._bank = bank
        self.slot = slot
        self._pinned: int | None = None

    @property
    def pinned(self) -> int | None:
        return self._pinned

    def search(self, vectors: np.ndarray, count: int, task_key: str = "", exact: bool = False):
        """Search the current snapshot: returns (snapshot, keys [q, count], similarities [q, count])."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"query vectors must be 2-D [q, dim], got shape {vectors.shape}")
        self._pinned = _PENDING
        try:
            snapshot = self._bank._published  # the one attribute read of the read path
            self._pinned = snapshot.version
            partition = snapshot.partitions.get(snapshot.partition_key(task_key))
            if partition is None:
                keys = np.full((len(vectors), count), -1, dtype=np.int64)
                return snapshot, keys, np.full(keys.shape, -np.inf, dtype=np.float32)
            keys, sims = partition.search(self.slot, vectors, count, exact=exact)
            return snapshot, keys, sims
        finally:
            self._pinned = None


IndexDiff = tuple[np.ndarray, np.ndarray, np.ndarray]  # (remove keys, add keys, add vectors)


def _apply_diff(index: Index, diff: IndexDiff) -> None:
    remove_keys, add_keys, add_vectors = diff
    if len(remove_keys):
        index.remove(remove_keys)
    if len(add_keys):
        index.add(add_keys, add_vectors)


class CopyPublisher:
    """Writer-side state of one partition in copy mode."""

    def __init__(self, config: ExperienceConfig, dim: int, slots: int):
        self.master = new_index(config, dim)
        self.slots = slots

    def publish(self, diff: IndexDiff, version: int, wait_for_readers: Callable[[int], None]) -> PartitionIndex:
        _apply_diff(self.master, diff)
        buffer = self.master.save()
        views = tuple(Index.restore(buffer, view=True) for _ in range(self.slots))
        return PartitionIndex(views, len(self.master), keepalive=buffer)


class DoubleBufferPublisher:
    """Writer-side state of one partition in double-buffer mode."""

    def __init__(self, config: ExperienceConfig, dim: int, slots: int):
        self.sets = [[new_index(config, dim) for _ in range(slots)] for _ in range(2)]
        self.front: int | None = None
        self.replay: IndexDiff | None = None
        self.retired_at = [-1, -1]  # version whose publication retired each set

    def publish(self, diff: IndexDiff, version: int, wait_for_readers: Callable[[int], None]) -> PartitionIndex:
        back = 0 if self.front is None else 1 - self.front
        wait_for_readers(self.retired_at[back])
        for index in self.sets[back]:
            if self.replay is not None:
                _apply_diff(index, self.replay)
            _apply_diff(index, diff)
        self.replay = diff
        if self.front is not None:
            self.retired_at[self.front] = version
        self.front = back
        indexes = tuple(self.sets[back])
        return PartitionIndex(indexes, len(indexes[0]))


def make_publisher(config: ExperienceConfig, dim: int, slots: int):
    if config.publish_mode == "copy":
        return CopyPublisher(config, dim, slots)
    return DoubleBufferPublisher(config, dim, slots)


class CopyingStore:
    """Writer-side state in copy and double-buffer modes: each publish copies the
    entry and statistics maps (O(bank)) and publishes every changed partition's
    index with that mode's publisher."""

    def __init__(self, config: ExperienceConfig, dim: int, slots: int,
                 wait_for_readers: Callable[[int], None]):
        self.config, self.dim, self.slots = config, dim, slots
        self._wait_for_readers = wait_for_readers
        self._publishers: dict = {}
        self.merges = 0  # never merges: every publish is whole

    def working(self, old: Snapshot):
        return dict(old.entries), dict(old.stats)

    def publish(self, old: Snapshot, entries: dict, stats: dict, touched: dict, version: int):
        partitions = self._publish_indexes(old, entries, touched, version)
        return (types.MappingProxyType(entries), types.MappingProxyType(stats),
                types.MappingProxyType(partitions))

    def replace(self, old: Snapshot, state, version: int):
        touched = dict(old.entries.items())
        entries = {e.id: e for e in state.entries}
        touched.update({entry_id: None for entry_id in entries if entry_id not in touched})
        # A restored entry is a new object, so every restored id is re-indexed.
        partitions = self._publish_indexes(old, entries, touched, version)
        return (types.MappingProxyType(entries), types.MappingProxyType(dict(state.stats)),
                types.MappingProxyType(partitions))

    def compact(self, wait: bool = True) -> None:
        """Nothing to fold: every publish is already whole."""

    def close(self) -> None:
        pass

    def _publish_indexes(self, old: Snapshot, entries: dict, touched: dict, version: int) -> dict:
        removes, adds = changes_by_partition(
            ((i, before, entries.get(i)) for i, before in touched.items()), self.config.per_task)
        partitions = dict(old.partitions)
        for key in sorted(set(removes) | set(adds)):
            if key not in self._publishers:
                self._publishers[key] = make_publisher(self.config, self.dim, self.slots)
            new = adds.get(key, [])
            diff = (np.asarray(removes.get(key, []), dtype=np.uint64),
                    np.asarray([e.id for e in new], dtype=np.uint64),
                    np.stack([e.embedding for e in new]) if new else np.zeros((0, self.dim), np.float32))
            partitions[key] = self._publishers[key].publish(diff, version, self._wait_for_readers)
        return partitions
