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
from usearch.index import Index

from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.layers import GONE, LayeredMap, LayeredWriter, merged
from crl_jax.experience.snapshot import ALL_TASKS, PartitionIndex, new_index

_EMPTY = types.MappingProxyType({})


class Rows:
    """Append-only (id, entry, vector) rows of one partition in one delta layer.

    A published snapshot sees the first `n` rows; the writer only appends past
    them (growing into a new array, so old snapshots keep theirs).
    """

    def __init__(self, dim: int, capacity: int = 64):
        self.vectors = np.zeros((capacity, dim), np.float32)
        self.ids = np.zeros(capacity, np.int64)
        self.entries: list = []

    def __len__(self):
        return len(self.entries)

    def append(self, entry) -> None:
        n = len(self.entries)
        if n == len(self.ids):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.ids = np.concatenate([self.ids, np.zeros_like(self.ids)])
        self.vectors[n] = entry.embedding
        self.ids[n] = entry.id
        self.entries.append(entry)

    def view(self) -> tuple:
        n = len(self.entries)
        return self.vectors[:n], self.ids[:n], self.entries


@dataclasses.dataclass
class _Layer:
    entries: dict = dataclasses.field(default_factory=dict)
    stats: dict = dataclasses.field(default_factory=dict)
    rows: dict = dataclasses.field(default_factory=dict)  # partition key -> Rows


@dataclasses.dataclass(frozen=True)
class _Base:
    entries: dict
    stats: dict
    indexes: dict  # partition key -> PartitionIndex


class DeltaPartition:
    """Read-only search structure of one partition: base index plus delta rows."""

    __slots__ = ("base", "layers", "entries", "size")

    def __init__(self, base: PartitionIndex | None, layers: tuple, entries: LayeredMap, size: int):
        self.base = base
        self.layers = layers  # ((delta index in entries.deltas, vectors, ids, row entries), ...)
        self.entries = entries
        self.size = size

    def search(self, slot: int, vectors: np.ndarray, count: int, exact: bool = False):
        """Returns (keys [q, count] int64 with -1 padding, similarities [q, count] float32)."""
        n_queries = len(vectors)
        hits = [[] for _ in range(n_queries)]  # (similarity, key) per query
        if self.base is not None and self.base.size:
            shadowed = sum(len(d) for d in self.entries.deltas)
            want = min(count + min(shadowed, count), self.base.size)
            keys, sims = self.base.search(slot, vectors, want, exact=exact)
            for row in range(n_queries):
                kept = [(s, k) for k, s in zip(keys[row], sims[row])
                        if k >= 0 and not self.entries.shadows(int(k))]
                if len(kept) < count and want < self.base.size and shadowed > count:
                    # Many shadowed ids near this query: ask again for all that could be hidden.
                    more_keys, more_sims = self.base.search(slot, vectors[row:row + 1],
                                                            min(count + shadowed, self.base.size), exact=exact)
                    kept = [(s, k) for k, s in zip(more_keys[0], more_sims[0])
                            if k >= 0 and not self.entries.shadows(int(k))]
                hits[row].extend(kept[:count])
        for depth, layer_vectors, ids, row_entries in self.layers:
            if not len(ids):
                continue
            delta = self.entries.deltas[depth]
            similarity = layer_vectors @ vectors.T  # [rows, q]: exact, the layers are small
            for row in range(n_queries):
                kept = 0
                for r in np.argsort(-similarity[:, row], kind="stable"):
                    key = int(ids[r])
                    if delta.get(key) is not row_entries[r] or self.entries.shadows(key, depth + 1):
                        continue  # an older row of an updated entry, or changed in a layer above
                    hits[row].append((float(similarity[r, row]), key))
                    kept += 1
                    if kept == count:
                        break
        out_keys = np.full((n_queries, count), -1, dtype=np.int64)
        out_sims = np.full((n_queries, count), -np.inf, dtype=np.float32)
        for row, found in enumerate(hits):
            found.sort(key=lambda h: -h[0])
            for j, (sim, key) in enumerate(found[:count]):
                out_keys[row, j], out_sims[row, j] = key, sim
        return out_keys, out_sims


class DeltaStore:
    """Writer-side state of the bank in delta mode. Used by the writer thread only."""

    def __init__(self, config: ExperienceConfig, dim: int, slots: int, on_merged: Callable[[], None]):
        self.config, self.dim, self.slots = config, dim, slots
        self._on_merged = on_merged
        self._merger = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="crl-bank-merger")
        self._masters: dict = {}  # partition key -> mutable Index; touched by the merger thread only
        self._base = _Base({}, {}, {})
        self._frozen: _Layer | None = None
        self._merging: concurrent.futures.Future | None = None
        self._active = _Layer()
        self.merges = 0
        self._entries = self._stats = None
        self._rewire(0, 0)

    def _partition(self, task_key: str) -> str:
        return task_key if self.config.per_task else ALL_TASKS

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
        """Append rows for what changed; return (entries, stats, partitions) of the new snapshot."""
        for entry_id, before in touched.items():
            after = entries.get(entry_id)
            if after is not None and after is not before:
                key = self._partition(after.task_key)
                self._active.rows.setdefault(key, Rows(self.dim)).append(after)
        view = self._snapshot_maps()
        if self._merging is None and max(len(self._active.entries), len(self._active.stats)) >= \
                self.config.delta_merge_at:
            self._start_merge()
        return view

    def _snapshot_maps(self):
        entries, stats = self._entries.view(), self._stats.view()
        layers = ([self._frozen] if self._frozen is not None else []) + [self._active]
        keys = set(self._base.indexes)
        for layer in layers:
            keys.update(layer.rows)
        partitions = {}
        for key in sorted(keys):
            parts = []
            for depth, layer in enumerate(layers):
                rows = layer.rows.get(key)
                if rows is not None and len(rows):
                    parts.append((depth, *rows.view()))
            base = self._base.indexes.get(key)
            # An upper bound (superseded rows count): an exact count per partition would be O(bank).
            size = (base.size if base is not None else 0) + sum(len(p[2]) for p in parts)
            partitions[key] = DeltaPartition(base, tuple(parts), entries, size)
        return entries, stats, types.MappingProxyType(partitions)

    # ----- merging ----------------------------------------------------------------------------
    def _start_merge(self) -> None:
        self._frozen, self._active = self._active, _Layer()
        self._rewire(len(self._entries), len(self._stats))
        base, frozen = self._base, self._frozen
        self._merging = self._merger.submit(self._merge, base, frozen)
        self._merging.add_done_callback(lambda _: self._on_merged())

    def _install(self, base: _Base) -> None:
        self._base, self._frozen, self._merging = base, None, None
        self.merges += 1
        self._rewire(len(self._entries), len(self._stats))

    def _merge(self, base: _Base, frozen: _Layer) -> _Base:
        """Merger thread: base + frozen layer -> a new base (O(bank), off the write path)."""
        removes: dict = {}
        adds: dict = {}
        for entry_id, after in frozen.entries.items():
            before = base.entries.get(entry_id)
            if before is not None:
                removes.setdefault(self._partition(before.task_key), []).append(entry_id)
            if after is not GONE:
                adds.setdefault(self._partition(after.task_key), []).append(after)
        indexes = dict(base.indexes)
        for key in sorted(set(removes) | set(adds)):
            indexes[key] = self._apply_to_master(key, removes.get(key, []), adds.get(key, []))
        return _Base(merged(base.entries, frozen.entries), merged(base.stats, frozen.stats), indexes)

    def _apply_to_master(self, key: str, remove_ids: list, add_entries: list) -> PartitionIndex:
        master = self._masters.get(key)
        if master is None:
            master = self._masters[key] = new_index(self.config, self.dim)
        if remove_ids:
            master.remove(np.asarray(remove_ids, dtype=np.uint64))
        if add_entries:
            master.add(np.asarray([e.id for e in add_entries], dtype=np.uint64),
                       np.stack([e.embedding for e in add_entries]))
        buffer = master.save()
        views = tuple(Index.restore(buffer, view=True) for _ in range(self.slots))
        return PartitionIndex(views, len(master), keepalive=buffer)

    def compact(self) -> None:
        """Fold every delta into the base now (waits for the merger)."""
        if self._merging is not None:
            self._install(self._merging.result())
        if self._active.entries or self._active.stats:
            self._start_merge()
            self._install(self._merging.result())

    def replace(self, old, state, version: int):
        """A restored bank becomes the base at once (the merger rebuilds the indexes)."""
        if self._merging is not None:
            self._merging.result()  # let it finish; its result is superseded
            self._merging = None
        entries = {e.id: e for e in state.entries}
        base = self._merger.submit(self._rebuild, entries, dict(state.stats)).result()
        self._base, self._frozen, self._active = base, None, _Layer()
        self._rewire(len(entries), len(base.stats))
        return self._snapshot_maps()

    def _rebuild(self, entries: dict, stats: dict) -> _Base:
        self._masters.clear()
        by_partition: dict = {}
        for entry in entries.values():
            by_partition.setdefault(self._partition(entry.task_key), []).append(entry)
        indexes = {key: self._apply_to_master(key, [], group) for key, group in sorted(by_partition.items())}
        return _Base(entries, stats, indexes)

    def close(self) -> None:
        self._merger.shutdown(wait=True)
