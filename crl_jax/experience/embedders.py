"""Embedder interface, a deterministic hashing embedder, and the query LRU cache."""
from __future__ import annotations

import collections
import hashlib
import re
from typing import Protocol, runtime_checkable

import numpy as np

_WORD = re.compile(r"\w+")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of shape [len(texts), dim]."""

    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Feature hashing of word n-grams, L2-normalised. Deterministic across processes.

    Python's hash() is salted per process, so buckets and signs come from
    blake2b. Texts sharing words get similar vectors: good enough for tests and
    for structured benchmark texts, with no model to load.
    """

    def __init__(self, dim: int = 256, max_ngram: int = 2):
        if dim < 2 or max_ngram < 1:
            raise ValueError(f"HashingEmbedder needs dim >= 2 and max_ngram >= 1, got {dim}, {max_ngram}")
        self.dim = dim
        self.max_ngram = max_ngram
        self._features: dict[str, tuple[int, float]] = {}

    def _feature(self, gram: str) -> tuple[int, float]:
        found = self._features.get(gram)
        if found is None:
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            found = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._features) < 200_000:
                self._features[gram] = found
        return found

    def embed(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise ValueError("embed() takes a list of texts, got a single str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for n in range(1, self.max_ngram + 1):
                for start in range(len(words) - n + 1):
                    bucket, sign = self._feature(" ".join(words[start:start + n]))
                    out[row, bucket] += sign
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
            else:  # empty text: a fixed unit vector keeps the output normalised
                out[row, 0] = 1.0
        return out


class EmbeddingCache:
    """LRU cache text -> embedding. Not thread-safe: one owner thread (the batcher)."""

    def __init__(self, capacity: int):
        if capacity < 0:
            raise ValueError(f"cache capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self._items: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, text: str) -> np.ndarray | None:
        vector = self._items.get(text)
        if vector is None:
            self.misses += 1
            return None
        self._items.move_to_end(text)
        self.hits += 1
        return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.capacity == 0:
            return
        self._items[text] = vector
        self._items.move_to_end(text)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)


def embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Call the embedder and check the shape/dtype contract (clear error if broken)."""
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dim):
        raise ValueError(f"embedder returned shape {vectors.shape}, expected ({len(texts)}, {embedder.dim})")
    return vectors
