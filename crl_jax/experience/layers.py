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
    """A read-only, immutable view: `base` then `deltas` (bottom to top)."""

    __slots__ = ("base", "deltas", "_length")

    def __init__(self, base: Mapping, deltas: tuple = (), length: int | None = None):
        self.base = base
        self.deltas = tuple(deltas)
        self._length = sum(1 for _ in _iterate(base, self.deltas)) if length is None else length

    def __getitem__(self, key):
        value = _lookup(self.base, self.deltas, key)
        if value is _ABSENT or value is GONE:
            raise KeyError(key)
        return value

    def __contains__(self, key):
        value = _lookup(self.base, self.deltas, key)
        return value is not _ABSENT and value is not GONE

    def __iter__(self):
        return _iterate(self.base, self.deltas)

    def __len__(self):
        return self._length

    def shadows(self, key, above: int = 0) -> bool:
        """Whether any delta from index `above` up names key (changed or deleted it)."""
        return any(key in delta for delta in self.deltas[above:])

    def __repr__(self):
        return f"LayeredMap({len(self)} items, {len(self.deltas)} deltas)"


class LayeredWriter(MutableMapping):
    """The writer's mutable view: reads through `lower` layers, writes into `active`.

    Writing back a lower layer's own value (an undo) removes the key from the
    active delta, so the delta names only what really changed since the base.
    """

    def __init__(self, base: Mapping, frozen: tuple, active: dict, length: int):
        self.base, self.frozen, self.active = base, tuple(frozen), active
        self._length = length

    def _lower(self, key):
        return _lookup(self.base, self.frozen, key)

    def __getitem__(self, key):
        value = self.active.get(key, _ABSENT)
        if value is _ABSENT:
            value = self._lower(key)
        if value is _ABSENT or value is GONE:
            raise KeyError(key)
        return value

    def __contains__(self, key):
        value = self.active.get(key, _ABSENT)
        if value is _ABSENT:
            value = self._lower(key)
        return value is not _ABSENT and value is not GONE

    def __setitem__(self, key, value):
        if key not in self:
            self._length += 1
        lower = self._lower(key)
        if lower is value:
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

    def __iter__(self):
        return _iterate(self.base, self.frozen + (self.active,))

    def __len__(self):
        return self._length

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
