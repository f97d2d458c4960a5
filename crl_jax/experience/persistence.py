"""Atomic save/load of the whole bank (used by training checkpoints).

One .npz file (no pickle): a UTF-8 JSON header with the entries' text and
statistics, plus the embeddings as one float32 array. The file is written
under a temporary name in the same directory, fsynced, then renamed over the
target with os.replace, so a crash mid-save leaves the previous save intact.
The usearch graph is rebuilt on load from the embeddings (a few seconds at
20k entries), which keeps the file independent of the publish mode.
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import pathlib
import zipfile
import threading

import numpy as np

from crl_jax.experience.entries import Entry, EntryStats, frozen_vector

FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class BankState:
    entries: tuple[Entry, ...]
    stats: dict
    next_id: int
    retrievals_folded: int
    dropped_retrievals: int


def _encode_time(t: float):
    return None if math.isinf(t) else t


def _payload(snapshot, dim: int) -> dict:
    entries = list(snapshot.entries.values())
    header = {
        "format": FORMAT_VERSION, "dim": dim, "next_id": snapshot.next_id,
        "retrievals_folded": snapshot.retrievals_folded, "dropped_retrievals": snapshot.dropped_retrievals,
        "entries": [{
            "id": e.id, "task_key": e.task_key, "text": e.text, "created_step": e.created_step,
            "source_prompt": e.source_prompt, "source_response": e.source_response,
            "source_call": e.source_call,
            "retrieval_count": snapshot.stats_of(e.id).retrieval_count,
            "last_retrieval_time": _encode_time(snapshot.stats_of(e.id).last_retrieval_time),
            "train_count": snapshot.stats_of(e.id).train_count,
            "last_trained_step": snapshot.stats_of(e.id).last_trained_step,
        } for e in entries],
    }
    embeddings = np.stack([e.embedding for e in entries]) if entries else np.zeros((0, dim), np.float32)
    return {"header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
            "embeddings": embeddings.astype(np.float32)}


def _write_payload(file, payload: dict) -> None:
    np.savez(file, **payload)


def save_snapshot(snapshot, path, dim: int) -> None:
    """Write `snapshot` to `path` atomically (temporary file + fsync + os.replace)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as file:
            _write_payload(file, _payload(snapshot, dim))
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


# What reading a damaged save can raise (numpy's npz reader, zipfile, json,
# and the header's own fields); all of it means "not a bank save".
_UNREADABLE = (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError, EOFError,
               zipfile.BadZipFile, UnicodeDecodeError)


def load_state(path, dim: int) -> BankState:
    """Read a saved bank. Raises ValueError on any file that is not a whole
    bank save of this dim (empty, truncated, random bytes, another format),
    FileNotFoundError when there is no file."""
    path = pathlib.Path(path)
    with open(path, "rb") as file:
        data = file.read()
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            header = json.loads(bytes(npz["header"]).decode("utf-8"))
            embeddings = np.asarray(npz["embeddings"], dtype=np.float32)
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except _UNREADABLE as exc:
        raise ValueError(f"{path} is not a readable experience bank save: {exc!r}") from exc
    if header.get("format") != FORMAT_VERSION or header.get("dim") != dim:
        raise ValueError(f"{path}: format {header.get('format')} dim {header.get('dim')}, "
                         f"expected format {FORMAT_VERSION} dim {dim}")
    try:
        return _state_of(header, embeddings, dim)
    except _UNREADABLE as exc:
        raise ValueError(f"{path}: a damaged experience bank save: {exc!r}") from exc


def _state_of(header: dict, embeddings: np.ndarray, dim: int) -> BankState:
    if embeddings.shape != (len(header["entries"]), dim):
        raise ValueError(f"embeddings shape {embeddings.shape} does not match the header")
    entries, stats = [], {}
    for row, item in enumerate(header["entries"]):
        entry = Entry(int(item["id"]), item["task_key"], item["text"], frozen_vector(embeddings[row], dim),
                      int(item["created_step"]), item["source_prompt"], item["source_response"],
                      item["source_call"])
        entries.append(entry)
        last = item["last_retrieval_time"]
        stats[entry.id] = EntryStats(int(item["retrieval_count"]), float("-inf") if last is None else float(last),
                                     int(item["train_count"]), item["last_trained_step"])
    return BankState(tuple(entries), stats, int(header["next_id"]), int(header["retrievals_folded"]),
                     int(header["dropped_retrievals"]))
