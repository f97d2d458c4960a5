"""Layered maps: an immutable base dict under small delta dicts, the top layer winning.

Delta publishing (publish_mode="delta") must not copy the bank's entry and
statistics maps at every publish: that copy is O(bank). Instead a snapshot
holds the base dict, which nobody mutates, and copies of the delta dicts
written since the base was made (each O(changes since the last merge)). A
delta maps an id to its new value or to GONE (deleted).

Iteration yields ids in ascending order, as the dicts of the other modes do:
ids are handed out in increasing order, so every id first written in a delta
is larger than every id of the layers below it, and a delta's new ids are in
the order they were made.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, MutableMapping


class _Gone:
    __slots__ = ()

    def __repr__(self):
        return "GONE"


GONE = _Gone()  # a delta's mark for "deleted in this layer"
_ABSENT = object()


def _lookup(base: Mapping, deltas, key):
    """Value of key in the stack (deltas top last), GONE if deleted, _ABSENT if never there."""
    for delta in reversed(deltas):
        value = delta.get(key, _ABSENT)
        if value is not _ABSENT:
            return value
    return base.get(key, _ABSENT)


def _present(value) -> bool:
    return value is not _ABSENT and value is not GONE


def _iterate(base: Mapping, deltas):
    for key in base:
        if _lookup(base, deltas, key) is not GONE:
            yield key
    for i, delta in enumerate(deltas):
        below = deltas[:i]
        for key in delta:
            if key in base or any(key in lower for lower in below):
                continue  # already yielded (or skipped) at its first layer
            if _lookup(base, deltas[i:], key) is not GONE:
                yield key


class LayeredMap(Mapping):
    """A read-only view of `base` under `deltas` (bottom to top); a snapshot's
    view is never changed (LayeredWriter is the writer's mutable form)."""

    __slots__ = ("base", "deltas", "_length")

    def __init__(self, base: Mapping, deltas: tuple, length: int):
        self.base, self.deltas, self._length = base, tuple(deltas), length

    def __getitem__(self, key):
        value = _lookup(self.base, self.deltas, key)
        if not _present(value):
            raise KeyError(key)
        return value

    def __contains__(self, key):
        return _present(_lookup(self.base, self.deltas, key))

    def __iter__(self):
        return _iterate(self.base, self.deltas)

    def __len__(self):
        return self._length

    def __repr__(self):
        return f"LayeredMap({len(self)} items, {len(self.deltas)} deltas)"


class LayeredWriter(LayeredMap, MutableMapping):
    """The writer's mutable view: reads through `base` and the `frozen` deltas,
    writes into `active` (the top delta, a dict mutated in place).

    Writing back a lower layer's own value (an undo) removes the key from the
    active delta, so the delta names only what really changed since the base.
    """

    __slots__ = ("frozen", "active")

    def __init__(self, base: Mapping, frozen: tuple, active: dict, length: int):
        super().__init__(base, tuple(frozen) + (active,), length)
        self.frozen, self.active = tuple(frozen), active

    def _lower(self, key):
        return _lookup(self.base, self.frozen, key)

    def __setitem__(self, key, value):
        if key not in self:
            self._length += 1
        if self._lower(key) is value:
            self.active.pop(key, None)
        else:
            self.active[key] = value

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self._length -= 1
        # A mark even for an id made in this delta: were it dropped, writing it
        # back (an undo) would put it after younger ids.
        self.active[key] = GONE

    def view(self) -> LayeredMap:
        """An immutable snapshot: the active delta is copied (O(its size), never O(base))."""
        return LayeredMap(self.base, self.frozen + (dict(self.active),), self._length)


def merged(base: Mapping, delta: Mapping, chunk: int = 4096) -> dict:
    """A new base dict: base with one delta applied (O(base); done off the write path).

    Copied in chunks: one dict(base) of a million items holds the GIL for tens
    of milliseconds, and every reader thread would wait that long."""
    out: dict = {}
    items = iter(base.items())
    while True:
        size = len(out)
        out.update(itertools.islice(items, chunk))
        if len(out) == size:
            break
    for key, value in delta.items():
        if value is GONE:
            out.pop(key, None)
        else:
            out[key] = value
    return out
