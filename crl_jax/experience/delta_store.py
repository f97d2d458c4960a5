"""Delta publishing: a publish costs O(batch), whatever the bank's size.

The copy and double-buffer publishers pay O(bank) at every publish: copy mode
serialises the whole index, and both copy the entry and statistics maps. In
delta mode (ExperienceConfig.publish_mode="delta") a snapshot is

- a **base**: entry and statistics dicts and one usearch index per partition,
  all immutable (each reader slot maps its own zero-copy view of the index);
- at most two **delta layers** written since: the *frozen* one, being merged
  into a new base by a background thread, and the *active* one the writer
  appends to. A layer is an entries delta, a statistics delta (id -> value,
  or GONE) and, per partition, append-only rows of (id, vector) searched
  exactly with one matrix product.

A search asks the base index and every layer and keeps a hit only if no layer
above it names the id (the entry was updated or deleted since), and, for a
layer's row, only if the row holds the entry the layer maps the id to (an
update appends a new row; the old one stays but no longer matches).

When the active layer names `delta_merge_at` ids, it is frozen and a single
merger thread folds it into a new base: O(bank) work, off the write path and
off the read path (readers keep searching base + frozen + active until the
writer installs the new base at its next publish). The merger thread alone
owns the per-partition master indexes (usearch serialises calls on one Index).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import types
from typing import Callable

import numpy as np
from usearch.index import Index, MetricKind
from usearch.index import search as usearch_search

from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.layers import GONE, LayeredWriter, merged
from crl_jax.experience.snapshot import PartitionIndex, changes_by_partition, new_index, partition_of

_LIVE = np.iinfo(np.int64).max  # "not dead yet": a version no snapshot reaches


class Rows:
    """Append-only (id, vector) rows of one partition in one delta layer.

    A published snapshot sees the first `n` rows; the writer only appends past
    them (growing into new arrays, so old snapshots keep theirs) and stamps
    `dead_at[r]` once, with the version whose publish superseded or deleted the
    row: a snapshot of version v sees row r iff dead_at[r] > v.
    """

    def __init__(self, dim: int, capacity: int = 64):
        self.vectors = np.zeros((capacity, dim), np.float32)
        self.ids = np.zeros(capacity, np.int64)
        self.dead_at = np.full(capacity, _LIVE, np.int64)
        self.n = 0

    def append(self, entry) -> int:
        if self.n == len(self.ids):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.ids = np.concatenate([self.ids, np.zeros_like(self.ids)])
            self.dead_at = np.concatenate([self.dead_at, np.full_like(self.dead_at, _LIVE)])
        self.vectors[self.n] = entry.embedding
        self.ids[self.n] = entry.id
        self.n += 1
        return self.n - 1

    def view(self) -> tuple:
        return self.vectors[:self.n], self.ids[:self.n], self.dead_at[:self.n]


def exact_rows(dataset: np.ndarray, queries: np.ndarray, count: int):
    """Exact cosine top-count rows of a small matrix: (rows [q, count], similarities).

    usearch's brute-force kernel on one thread, not a NumPy product: BLAS
    starts threads of its own inside every reader thread, more threads than
    a small machine has cores."""
    found = usearch_search(dataset, queries, count, MetricKind.Cos, exact=True, threads=1)
    rows = np.atleast_2d(np.asarray(found.keys, dtype=np.int64))
    sims = 1.0 - np.atleast_2d(np.asarray(found.distances, dtype=np.float32))
    return rows, sims


def kill(dead_at: np.ndarray, row: int, version: int) -> bool:
    """Stamp a row (or a base id) dead from `version` on; the first stamp stays
    (a later one would bring it back for the snapshots in between). Returns
    whether this call stamped it."""
    if row >= len(dead_at) or dead_at[row] != _LIVE:
        return False
    dead_at[row] = version
    return True


@dataclasses.dataclass
class _Layer:
    entries: dict = dataclasses.field(default_factory=dict)
    stats: dict = dataclasses.field(default_factory=dict)
    rows: dict = dataclasses.field(default_factory=dict)  # partition key -> Rows
    row_of: dict = dataclasses.field(default_factory=dict)  # id -> (partition key, row) of its live row


@dataclasses.dataclass
class _Base:
    entries: dict
    stats: dict
    indexes: dict  # partition key -> PartitionIndex
    dead_at: np.ndarray  # per id: the version from which a delta layer overrides the base's copy
    overridden: int = 0  # ids stamped in dead_at

    def override(self, entry_id: int, version: int) -> None:
        """A delta layer changed or deleted entry_id: the base's copy is hidden from `version` on."""
        if kill(self.dead_at, entry_id, version):
            self.overridden += 1


class DeltaPartition:
    """Read-only search structure of one partition: base index plus delta rows, at one version."""

    __slots__ = ("base", "base_dead_at", "overridden", "layers", "version", "size")

    def __init__(self, base, base_dead_at, overridden: int, layers: tuple, version: int, size: int):
        self.base, self.base_dead_at, self.overridden = base, base_dead_at, overridden
        self.layers = layers  # ((vectors, ids, dead_at), ...) of each delta layer
        self.version = version
        self.size = size

    def _base_hits(self, slot, vectors, count, exact):
        """The base's hits, those a delta layer overrides dropped (-1, -inf)."""
        if not self.overridden:
            return self.base.search(slot, vectors, min(count, self.base.size), exact=exact)
        # Fetch a little more than asked, as some hits may be overridden; where too
        # many were, ask again for all that could be hidden.
        for want in (min(count + min(self.overridden, count), self.base.size),
                     min(count + self.overridden, self.base.size)):
            keys, sims = self.base.search(slot, vectors, want, exact=exact)
            dead = (self.base_dead_at[np.maximum(keys, 0)] <= self.version) & (keys >= 0)
            if want == self.base.size or ((want - dead.sum(axis=1)) >= count).all():
                break
        return np.where(dead, -1, keys), np.where(dead, -np.inf, sims).astype(np.float32)

    def search(self, slot: int, vectors: np.ndarray, count: int, exact: bool = False):
        """Returns (keys [q, count] int64 with -1 padding, similarities [q, count] float32)."""
        n_queries = len(vectors)
        keys = [np.full((n_queries, 0), -1, np.int64)]
        sims = [np.full((n_queries, 0), -np.inf, np.float32)]
        if self.base is not None and self.base.size:
            base_keys, base_sims = self._base_hits(slot, vectors, count, exact)
            keys.append(base_keys)
            sims.append(base_sims)
        for layer_vectors, ids, dead_at in self.layers:
            if not len(ids):
                continue
            dead = dead_at <= self.version
            rows, layer_sims = exact_rows(layer_vectors, vectors, min(count + int(dead.sum()), len(ids)))
            gone = (rows < 0) | dead[np.maximum(rows, 0)]
            keys.append(np.where(gone, -1, ids[np.maximum(rows, 0)]))
            sims.append(np.where(gone, -np.inf, layer_sims).astype(np.float32))
        keys, sims = np.concatenate(keys, axis=1), np.concatenate(sims, axis=1)
        order = np.argsort(-sims, axis=1, kind="stable")[:, :count]
        out_keys = np.take_along_axis(keys, order, axis=1)
        out_sims = np.take_along_axis(sims, order, axis=1)
        out_keys[~np.isfinite(out_sims)] = -1
        if out_keys.shape[1] < count:
            pad = count - out_keys.shape[1]
            out_keys = np.pad(out_keys, ((0, 0), (0, pad)), constant_values=-1)
            out_sims = np.pad(out_sims, ((0, 0), (0, pad)), constant_values=-np.inf)
        return out_keys, out_sims.astype(np.float32)


def _new_base(entries: dict, stats: dict, indexes: dict, id_bound: int) -> _Base:
    """A base whose ids are all below id_bound (the bank's next id when it was frozen)."""
    return _Base(entries, stats, indexes, np.full(id_bound, _LIVE, np.int64))


class DeltaStore:
    """Writer-side state of the bank in delta mode. Used by the writer thread only."""

    def __init__(self, config: ExperienceConfig, dim: int, slots: int, on_merged: Callable[[], None]):
        self.config, self.dim, self.slots = config, dim, slots
        self._on_merged = on_merged
        self._merger = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="crl-bank-merger")
        self._masters: dict = {}  # partition key -> mutable Index; touched by the merger thread only
        self._base = _new_base({}, {}, {}, 0)
        self._next_id = 0  # above every id written so far (sizes a new base's dead_at)
        self._frozen: _Layer | None = None
        self._merging: concurrent.futures.Future | None = None
        self._active = _Layer()
        self.merges = 0
        self._entries = self._stats = None
        self._rewire(0, 0)

    def _rewire(self, n_entries: int, n_stats: int) -> None:
        frozen = (self._frozen,) if self._frozen is not None else ()
        self._entries = LayeredWriter(self._base.entries, tuple(f.entries for f in frozen),
                                      self._active.entries, n_entries)
        self._stats = LayeredWriter(self._base.stats, tuple(f.stats for f in frozen), self._active.stats,
                                    n_stats)

    # ----- the bank's publish path --------------------------------------------------------
    def working(self, old):
        """The writer's entry and statistics maps (mutated in place; O(1))."""
        if self._merging is not None and self._merging.done():
            self._install(self._merging.result())  # a merge failure fails the writer
        return self._entries, self._stats

    def publish(self, old, entries, stats, touched: dict, version: int):
        """Stamp what changed, append rows for new values; return the new snapshot's
        (entries, stats, partitions). O(changes), never O(bank)."""
        base = self._base
        for entry_id, before in touched.items():
            after = entries.get(entry_id)
            if after is before:
                continue
            base.override(entry_id, version)
            for layer in (self._frozen, self._active):
                found = layer.row_of.pop(entry_id, None) if layer is not None else None
                if found is not None:
                    kill(layer.rows[found[0]].dead_at, found[1], version)
            if after is not None:
                self._next_id = max(self._next_id, entry_id + 1)
                key = partition_of(after.task_key, self.config.per_task)
                rows = self._active.rows.setdefault(key, Rows(self.dim))
                self._active.row_of[entry_id] = (key, rows.append(after))
        view = self._snapshot(version)
        changed = max(len(self._active.entries), len(self._active.stats))
        threshold = max(self.config.delta_merge_at, int(self.config.delta_merge_fraction * len(base.entries)))
        if self._merging is None and changed >= threshold:
            # A layer far past the threshold is a bulk load: an index build that
            # its caller waits for (compact), so it gets every core.
            self._start_merge(threads=0 if changed > 16 * self.config.delta_merge_at else 1)
        return view

    def _snapshot(self, version: int):
        layers = ([self._frozen] if self._frozen is not None else []) + [self._active]
        base = self._base
        partitions = {}
        for key in sorted(set(base.indexes).union(*(layer.rows for layer in layers))):
            views = tuple(layer.rows[key].view() for layer in layers if key in layer.rows)
            index = base.indexes.get(key)
            # An upper bound (dead rows count): an exact count per partition would be O(bank).
            size = (index.size if index is not None else 0) + sum(len(v[1]) for v in views)
            partitions[key] = DeltaPartition(index, base.dead_at, base.overridden, views, version, size)
        return self._entries.view(), self._stats.view(), types.MappingProxyType(partitions)

    # ----- merging ----------------------------------------------------------------------------
    def _start_merge(self, threads: int = 1) -> None:
        self._frozen, self._active = self._active, _Layer()
        self._rewire(len(self._entries), len(self._stats))
        self._merging = self._merger.submit(self._merge, self._base, self._frozen, self._next_id, threads)
        self._merging.add_done_callback(lambda _: self._on_merged())

    def _install(self, base: _Base) -> None:
        # Ids changed since the freeze override the new base in every snapshot that uses it.
        for entry_id in self._active.entries:
            base.override(entry_id, 0)
        self._base, self._frozen, self._merging = base, None, None
        self.merges += 1
        self._rewire(len(self._entries), len(self._stats))

    def _merge(self, base: _Base, frozen: _Layer, id_bound: int, threads: int = 1) -> _Base:
        """Merger thread: base + frozen layer -> a new base (O(bank), off the write path)."""
        removes, adds = changes_by_partition(
            ((i, base.entries.get(i), None if after is GONE else after) for i, after in frozen.entries.items()),
            self.config.per_task)
        indexes = dict(base.indexes)
        for key in sorted(set(removes) | set(adds)):
            indexes[key] = self._apply_to_master(key, removes.get(key, []), adds.get(key, []), threads)
        return _new_base(merged(base.entries, frozen.entries), merged(base.stats, frozen.stats), indexes,
                         id_bound)

    def _apply_to_master(self, key: str, remove_ids: list, add_entries: list, threads: int = 1) -> PartitionIndex:
        """One thread by default: a background merge must not take every core from
        the readers (usearch's own default); compact and restore, which callers
        wait for, use them all (threads=0)."""
        master = self._masters.get(key)
        if master is None:
            master = self._masters[key] = new_index(self.config, self.dim)
        if remove_ids:
            master.remove(np.asarray(remove_ids, dtype=np.uint64))
        if add_entries:
            master.add(np.asarray([e.id for e in add_entries], dtype=np.uint64),
                       np.stack([e.embedding for e in add_entries]), threads=threads)
        buffer = master.save()
        views = tuple(Index.restore(buffer, view=True) for _ in range(self.slots))
        return PartitionIndex(views, len(master), keepalive=buffer)

    def compact(self, wait: bool = True) -> None:
        """Fold every delta into the base now: wait for it with every core, or
        (wait=False) start a background merge, as the threshold would, unless
        one is under way."""
        if not wait:
            if self._merging is None and (self._active.entries or self._active.stats):
                self._start_merge()
            return
        if self._merging is not None:
            self._install(self._merging.result())
        if self._active.entries or self._active.stats:
            self._start_merge(threads=0)
            self._install(self._merging.result())

    def replace(self, old, state, version: int):
        """A restored bank becomes the base at once (the merger rebuilds the indexes)."""
        if self._merging is not None:
            self._merging.result()  # let it finish; its result is superseded
            self._merging = None
        entries = {e.id: e for e in state.entries}
        self._next_id = max(self._next_id, state.next_id, max(entries, default=-1) + 1)
        base = self._merger.submit(self._rebuild, entries, dict(state.stats), self._next_id).result()
        self._base, self._frozen, self._active = base, None, _Layer()
        self._rewire(len(entries), len(base.stats))
        return self._snapshot(version)

    def _rebuild(self, entries: dict, stats: dict, id_bound: int) -> _Base:
        self._masters.clear()
        _, by_partition = changes_by_partition(((e.id, None, e) for e in entries.values()),
                                               self.config.per_task)
        indexes = {key: self._apply_to_master(key, [], group, threads=0)
                   for key, group in sorted(by_partition.items())}
        return _new_base(entries, stats, indexes, id_bound)

    def close(self) -> None:
        self._merger.shutdown(wait=True)
