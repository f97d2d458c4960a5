"""BM25 keyword search over the catalogue (WebShop searches with BM25 via
Pyserini; this is the same Okapi BM25 scoring, in plain Python)."""
from __future__ import annotations

import collections
import math
import re

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_scores(query: list[str], docs: list[list[str]], k1: float = 0.9,
                b: float = 0.4) -> list[float]:
    """Okapi BM25 score of every document for the query (Pyserini's default
    k1=0.9, b=0.4). Reference implementation: one pass, no index."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / max(n, 1)
    df = collections.Counter(t for d in docs for t in set(d))
    scores = []
    for d in docs:
        tf = collections.Counter(d)
        s = 0.0
        for t in query:
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avg))
        scores.append(s)
    return scores


class BM25Index:
    """Inverted index with the same scores as ``bm25_scores``."""

    def __init__(self, docs: list[str], k1: float = 0.9, b: float = 0.4):
        self.k1, self.b = k1, b
        toks = [tokenize(d) for d in docs]
        self.lengths = [len(t) for t in toks]
        self.avg = sum(self.lengths) / max(len(toks), 1)
        self.postings: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        for i, t in enumerate(toks):
            for term, count in collections.Counter(t).items():
                self.postings[term].append((i, count))
        n = len(toks)
        self.idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5))
                    for t, p in self.postings.items()}

    def search(self, query: str, top_k: int = 50) -> list[int]:
        """Indices of the top_k documents, best first (ties: lower index)."""
        scores: dict[int, float] = collections.defaultdict(float)
        for term in tokenize(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, tf in self.postings[term]:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [i for i, _ in ranked[:top_k]]
