"""Bank entries, their usage statistics, and the writer's operations."""
from __future__ import annotations

import dataclasses

import numpy as np


def frozen_vector(vector, dim: int | None = None) -> np.ndarray:
    """A read-only float32 copy of a 1-D embedding (entries are shared across snapshots)."""
    array = np.array(vector, dtype=np.float32, copy=True)
    if array.ndim != 1 or (dim is not None and array.shape[0] != dim):
        raise ValueError(f"embedding must be a 1-D vector of length {dim}, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("embedding contains NaN or inf")
    array.setflags(write=False)
    return array


@dataclasses.dataclass(frozen=True, eq=False)  # eq on numpy arrays is ambiguous: identity instead
class Entry:
    """One experience entry: structured text (title + content) and its embedding.

    `source_call` keys the extractor training buffer: the extractor call whose
    (prompt, response) produced this text, so its reward can be credited.
    """

    id: int
    task_key: str
    text: str
    embedding: np.ndarray = dataclasses.field(repr=False)
    created_step: int = 0
    source_prompt: str = ""
    source_response: str = ""
    source_call: str | None = None


@dataclasses.dataclass(frozen=True)
class EntryStats:
    """Usage statistics: c(m), last retrieval time, c_train(m), t_last(m)."""

    retrieval_count: int = 0
    last_retrieval_time: float = float("-inf")
    train_count: int = 0
    last_trained_step: int | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class AddEntry:
    task_key: str
    text: str
    embedding: np.ndarray = dataclasses.field(repr=False)
    created_step: int = 0
    source_prompt: str = ""
    source_response: str = ""
    source_call: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class UpdateEntry:
    """Replace the text and embedding of an entry; its id and statistics stay."""

    entry_id: int
    text: str
    embedding: np.ndarray = dataclasses.field(repr=False)
    source_prompt: str | None = None
    source_response: str | None = None
    source_call: str | None = None


@dataclasses.dataclass(frozen=True)
class DeleteEntry:
    entry_id: int


@dataclasses.dataclass(frozen=True)
class MarkTrained:
    """Record that the extractor trained on these entries at `step` (Eq. 7 inputs)."""

    entry_ids: tuple[int, ...]
    step: int


WriteOp = AddEntry | UpdateEntry | DeleteEntry | MarkTrained


@dataclasses.dataclass(frozen=True)
class PublishReceipt:
    """What the writer acknowledges once a request is visible to readers."""

    version: int
    added_ids: tuple[int, ...]
