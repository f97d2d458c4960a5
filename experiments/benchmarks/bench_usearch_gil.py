"""How long usearch's O(index) calls keep other Python threads waiting (the GIL).

    .venv/bin/python experiments/benchmarks/bench_usearch_gil.py [--entries=200000] [--dim=32]

A ticker thread sleeps 0.5 ms in a loop; the longest gap between its ticks
while the main thread runs one call is how long no other thread could run
Python (the delta bank's readers, during a background merge). A C call that
releases the GIL shows gaps near the ticker's own sleep.
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
from absl import app, flags
from usearch.index import Index

FLAGS = flags.FLAGS
flags.DEFINE_integer("entries", 200_000, "index size")
flags.DEFINE_integer("dim", 32, "vector dimension")


class Ticker:
    def __init__(self):
        self.gaps: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.0005)
            now = time.perf_counter()
            self.gaps.append(now - last)
            last = now

    def measure(self, name: str, call) -> None:
        time.sleep(0.05)
        self.gaps.clear()
        started = time.perf_counter()
        call()
        took = time.perf_counter() - started
        time.sleep(0.02)
        print(f"{name:34s} {took * 1e3:8.1f} ms   longest wait of another thread {max(self.gaps) * 1e3:7.1f} ms")

    def stop(self):
        self._stop.set()
        self._thread.join()


def main(_):
    print(f"load average {os.getloadavg()[0]:.2f}; {FLAGS.entries} entries, dim {FLAGS.dim}")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((FLAGS.entries, FLAGS.dim)).astype(np.float32)
    index = Index(ndim=FLAGS.dim, metric="cos", connectivity=16, expansion_add=16)
    index.add(np.arange(FLAGS.entries), vectors)
    as_dict = {i: i for i in range(FLAGS.entries)}
    ticker = Ticker()
    saved = []
    ticker.measure("dict(base) copy", lambda: dict(as_dict))
    ticker.measure("index.save() to bytes", lambda: saved.append(index.save()))
    ticker.measure("Index.restore(bytes, view=True)", lambda: Index.restore(saved[0], view=True))
    ticker.measure("index.add(64 vectors)", lambda: index.add(np.arange(64) + FLAGS.entries, vectors[:64]))
    ticker.measure("index.search(64 queries, 16)", lambda: index.search(vectors[:64], 16))
    ticker.stop()


if __name__ == "__main__":
    app.run(main)
