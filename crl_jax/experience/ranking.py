"""Ranking a query's candidates (Eq. 6), and the exact search of the
deterministic pipeline (``experience.sync``).

Both retrieval paths rank with ``rank_hits``. They differ in how they find
candidates: the threaded path (search_path.SearchPath) batches queries by arrival
time and asks usearch's approximate graph, whose shape depends on the order
and threading of its inserts, so the same query can meet other candidates
from run to run, and a bank restored from a checkpoint rebuilds another
graph. ``ExactSearch`` ranks every query of a call against one published
snapshot by exact cosine over the partition's entries, in the caller's
thread, candidates ordered by (similarity, id); it records the call's
retrievals and publishes them before it returns. Same bank, same queries:
same answers, on any run and after any resume. It costs O(entries) per
query, which is nothing at the CPU presets' hundreds of entries.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Callable, Sequence

import numpy as np

from crl_jax.experience.config import ExperienceConfig
from crl_jax.experience.diversification import diversified_scores, select_top_k
from crl_jax.experience.embedders import EmbeddingCache, embed_checked
from crl_jax.experience.entries import Entry


@dataclasses.dataclass(frozen=True)
class Retrieval:
    entry: Entry
    score: float  # Eq. 6 score
    similarity: float  # s_rank: cosine similarity of query and entry
    snapshot_version: int


def rank_hits(snapshot, ids: np.ndarray, similarity: np.ndarray, k: int, now: float,
              config: ExperienceConfig, rng: np.random.Generator) -> list[Retrieval]:
    """The k best of a candidate pool (entry ids with their similarities, in
    the order the search gave them) after Eq. 6's re-ranking. Candidates
    below config.min_similarity are dropped first (none left: no hit)."""
    if config.min_similarity > -1.0:
        close = np.asarray(similarity) >= config.min_similarity
        ids, similarity = np.asarray(ids)[close], np.asarray(similarity)[close]
        if not len(ids):
            return []
    stats = [snapshot.stats_of(int(e)) for e in ids]
    counts = np.array([s.retrieval_count for s in stats], dtype=np.float64)
    lasts = np.array([s.last_retrieval_time for s in stats], dtype=np.float64)
    window = config.recency_window
    scores = diversified_scores(similarity, counts, lasts, now, config.diversity_lambda, window,
                                config.diversity_score)
    recent = (now - lasts) < window
    chosen = select_top_k(scores, k, recent, config.released_top1_shuffle,
                          config.released_shuffle_prob, rng)
    return [Retrieval(snapshot.entries[int(ids[j])], float(scores[j]), float(similarity[j]),
                      snapshot.version) for j in chosen]


class ExactSearch:
    """Deterministic retrieval for the synchronous pipeline (see the module
    docstring). Thread-safe: calls are served one at a time."""

    def __init__(self, bank, embedder, config: ExperienceConfig, clock: Callable[[], float],
                 seed: int = 0):
        self.bank, self.embedder, self.config, self.clock = bank, embedder, config, clock
        self.cache = EmbeddingCache(config.cache_size)
        self.rng = np.random.default_rng([seed, 1_000])
        self._lock = threading.Lock()
        self._matrices: dict = {}  # (snapshot version, partition) -> (ids, unit rows)

    def search(self, queries: Sequence[str], task_keys: Sequence[str], k: int,
               record: bool = True) -> list[list[Retrieval]]:
        """The top-k of each query against the snapshot published now."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        with self._lock:
            vectors = self._embed(list(queries))
            snapshot = self.bank.snapshot
            now = self.clock()
            out, recorded = [], []
            for vector, key in zip(vectors, task_keys):
                ids, sims = self._candidates(snapshot, str(key), vector, self.config.oversample_n * k)
                hits = rank_hits(snapshot, ids, sims, k, now, self.config, self.rng)
                out.append(hits)
                recorded += [h.entry.id for h in hits] if record else []
            if recorded:  # visible to the next call, as a fixed point of the run
                self.bank.record_retrievals(recorded, now)
                self.bank.flush()
            return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        found = {t: self.cache.get(t) for t in dict.fromkeys(texts)}
        missing = [t for t, v in found.items() if v is None]
        if missing:  # one embedder call for the call's new texts
            for text, vector in zip(missing, embed_checked(self.embedder, missing)):
                found[text] = vector
                self.cache.put(text, vector)
        return (np.stack([found[t] for t in texts]) if texts
                else np.zeros((0, self.bank.dim), np.float32))

    def _candidates(self, snapshot, task_key: str, vector: np.ndarray, pool: int):
        """The pool best entries by cosine, ties broken by id (oldest first)."""
        part = snapshot.partition_key(task_key)
        cached = self._matrices.get((snapshot.version, part))
        if cached is None:
            entries = sorted((e for e in snapshot.entries.values()
                              if snapshot.partition_key(e.task_key) == part), key=lambda e: e.id)
            ids = np.array([e.id for e in entries], dtype=np.int64)
            rows = (np.stack([e.embedding for e in entries]).astype(np.float64) if entries
                    else np.zeros((0, self.bank.dim)))
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            cached = (ids, rows / np.where(norms > 0, norms, 1.0))
            self._matrices = {(snapshot.version, part): cached,
                              **{k: v for k, v in self._matrices.items() if k[0] == snapshot.version}}
        ids, rows = cached
        if not len(ids):
            return ids, np.zeros(0, np.float64)
        q = np.asarray(vector, np.float64)
        sims = rows @ (q / max(float(np.linalg.norm(q)), 1e-12))
        order = np.lexsort((ids, -sims))[:pool]
        return ids[order], sims[order]

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
