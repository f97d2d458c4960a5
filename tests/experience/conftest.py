"""Shared helpers for the experience tests: tiny embedders with known outputs."""
import threading

import numpy as np
import pytest


class TableEmbedder:
    """Returns fixed unit vectors for known texts (hash-embeds unknown ones); logs every call."""

    def __init__(self, table: dict[str, np.ndarray], dim: int):
        from crl_jax.experience import HashingEmbedder
        self.dim = dim
        self.table = {k: np.asarray(v, np.float32) / np.linalg.norm(v) for k, v in table.items()}
        self.fallback = HashingEmbedder(dim)
        self.calls: list[list[str]] = []
        self.gate: threading.Event | None = None  # when set up, calls wait for it
        self.entered = threading.Event()
        self.error: Exception | None = None

    def embed(self, texts):
        self.calls.append(list(texts))
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(20), "test gate never opened"
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return np.stack([self.table[t] if t in self.table else self.fallback.embed([t])[0] for t in texts])


@pytest.fixture
def table_embedder():
    return TableEmbedder
