"""Benchmark of the experience bank: snapshot publishing vs a reader/writer lock.

    .venv/bin/python experiments/bench_experience.py --quick [--json out.json]

Measures, in one process (ratios only; these machines swing about 2x):
1. Reader search latency (p50/p99) and throughput with no writer and with a
   writer publishing continuously, for the two snapshot modes (copy-on-publish,
   double buffer) and for the paper's design: one index behind a
   reader/writer lock (implemented here as the baseline).
2. Publish latency (writer side, one batch of 8 operations) against bank size.

Vectors are MiniLM embeddings (models.bert_encoder.TextEmbedder) of generated
experience-like texts, cached under --cache_dir; banks larger than the
embedded base are filled with normalised mixtures of two real embeddings
(structured like real data, never uniform random vectors). If the MiniLM
encoder cannot be imported, the deterministic hashing embedder is used and a
warning is printed.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import threading
import time

import numpy as np
from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from crl_jax.experience import AddEntry, DeleteEntry, ExperienceBank, ExperienceConfig, HashingEmbedder  # noqa: E402
from crl_jax.experience import UpdateEntry  # noqa: E402
from crl_jax.experience.snapshot import PartitionIndex, new_index  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_bool("quick", False, "small sizes: under ~2 minutes on 2 cores once embeddings are cached")
flags.DEFINE_string("json", None, "write all numbers to this JSON file")
flags.DEFINE_string("cache_dir", "/tmp/crl_jax_bench_cache", "where embeddings are cached")
flags.DEFINE_integer("readers", 4, "reader threads (= search workers W)")
flags.DEFINE_float("seconds", None, "seconds per latency phase (default 4, quick 1.5)")
flags.DEFINE_float("writer_pause_s", 0.01, "pause between the busy writer's publishes")
flags.DEFINE_string("dtype", "f32", "usearch dtype: f32 or bf16")

OBJECTS = ["apple", "mug", "key", "book", "knife", "lamp", "potato", "towel", "egg", "pan", "door", "chest",
           "scroll", "wand", "fountain", "boulder", "statue", "ring", "coin", "cloth"]
PLACES = ["countertop 1", "fridge", "microwave", "sinkbasin", "drawer 2", "shelf 3", "dark room", "corridor",
          "north-east corner", "altar", "cabinet 4", "desk", "bed", "garbagecan", "stove burner 2"]
ACTIONS = ["heat", "cool", "clean", "pick up", "put", "examine", "open", "unlock", "avoid", "zap"]
LESSONS = ["check the receptacle before moving on", "do not repeat an action that said Nothing happens",
           "go to the closest unexplored location first", "keep the object in hand until the goal is done",
           "look at the legend to find the stairs", "retreat when HP is below half",
           "search drawers before shelves", "use the exact command syntax from the valid actions"]


def experience_text(rng) -> str:
    obj, obj2 = rng.choice(OBJECTS, 2, replace=False)
    place, place2 = rng.choice(PLACES, 2, replace=False)
    act = rng.choice(ACTIONS)
    lesson = rng.choice(LESSONS)
    return (f"Title: {act} the {obj} and bring it to the {place}. Situation: the goal asks to {act} a {obj}; "
            f"the {obj2} is near the {place2}. Action sequence: go to {place2}, take {obj}, {act} it, "
            f"go to {place}. Decision logic: {lesson}. Failure prevention: never {act} the {obj2} by mistake.")


def query_text(rng) -> str:
    return (f"goal: {rng.choice(ACTIONS)} some {rng.choice(OBJECTS)} and put it in {rng.choice(PLACES)}, "
            f"observation: you are in the middle of a room; you see a {rng.choice(PLACES)}.")


def load_embedder():
    try:
        from models.bert_encoder import TextEmbedder, minilm_path
        return TextEmbedder(minilm_path()), "minilm"
    except Exception as exc:  # noqa: BLE001 - the benchmark still runs, and says so
        print(f"WARNING: MiniLM encoder unavailable ({exc!r}); using HashingEmbedder(384)")
        return HashingEmbedder(384), "hashing"


def cached_embeddings(embedder, name: str, texts: list[str], cache_dir: str) -> np.ndarray:
    key = hashlib.sha256(("\n".join(texts) + name).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir, f"emb-{name}-{len(texts)}-{key}.npy")
    if os.path.exists(path):
        return np.load(path)
    started = time.perf_counter()
    vectors = np.concatenate([np.asarray(embedder.embed(texts[i:i + 256]), np.float32)
                              for i in range(0, len(texts), 256)])
    print(f"embedded {len(texts)} texts with {name} in {time.perf_counter() - started:.1f} s")
    os.makedirs(cache_dir, exist_ok=True)
    np.save(path, vectors)
    return vectors


def expand(base: np.ndarray, n: int, rng) -> np.ndarray:
    """n vectors: the base, then normalised mixtures of two base vectors (structured, not uniform)."""
    if n <= len(base):
        return base[:n]
    i, j = rng.integers(len(base), size=(2, n - len(base)))
    t = rng.uniform(0.3, 0.7, size=(n - len(base), 1)).astype(np.float32)
    mixed = t * base[i] + (1 - t) * base[j]
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return np.concatenate([base, mixed])


class ReadWriteLock:
    """Writer-preferring readers/writer lock (the paper's guard around M)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    def acquire_read(self):
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1

    def release_read(self):
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_write(self):
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True

    def release_write(self):
        with self._cond:
            self._writer = False
            self._cond.notify_all()


class LockedBank:
    """Baseline: one mutable usearch index, readers and the writer behind a RW lock."""

    def __init__(self, config, vectors):
        self.index = new_index(config, vectors.shape[1])
        self.index.add(np.arange(len(vectors)), vectors)
        self.lock = ReadWriteLock()
        # Same result post-processing as the snapshot readers, over the one shared index object.
        self.view = PartitionIndex((self.index,), len(vectors))
        self.next_key = len(vectors)
        self.live = list(range(len(vectors)))

    def search(self, queries, count):
        self.lock.acquire_read()
        try:
            return self.view.search(0, queries, count)
        finally:
            self.lock.release_read()

    def write(self, add_vectors, update_vectors, n_delete, rng):
        self.lock.acquire_write()
        try:
            keys = np.arange(self.next_key, self.next_key + len(add_vectors))
            self.next_key += len(keys)
            self.index.add(keys, add_vectors)
            updated = rng.choice(self.live[:-len(keys) or None], len(update_vectors), replace=False)
            self.index.remove(updated)
            self.index.add(updated, update_vectors)
            self.index.remove(np.asarray(self.live[:n_delete]))
            self.live = self.live[n_delete:] + list(keys)
        finally:
            self.lock.release_write()


def write_batch(rng, pool):
    return pool[rng.integers(len(pool), size=4)], pool[rng.integers(len(pool), size=2)]


def bank_write(bank, rng, pool):
    adds, updates = write_batch(rng, pool)
    snapshot = bank.snapshot
    ids = list(snapshot.entries)
    ops = [AddEntry("t", "bench entry", v) for v in adds]
    ops += [UpdateEntry(int(i), "bench update", v) for i, v in zip(rng.choice(ids[2:], 2, replace=False), updates)]
    ops += [DeleteEntry(int(i)) for i in ids[:2]]
    bank.apply(ops, timeout=120)


def latency_phase(search, write, n_readers, seconds, queries, count, writer_pause):
    latencies = [[] for _ in range(n_readers)]
    stop = threading.Event()
    publishes = [0]
    errors = []

    def reader(slot):
        rng = np.random.default_rng(slot)
        try:
            while not stop.is_set():
                batch = queries[rng.integers(len(queries), size=4)]
                started = time.perf_counter()
                search(slot, batch, count)
                latencies[slot].append(time.perf_counter() - started)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def writer():
        rng = np.random.default_rng(1234)
        try:
            while not stop.is_set():
                write(rng)
                publishes[0] += 1
                time.sleep(writer_pause)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(n_readers)]
    if write is not None:
        threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    all_lat = np.concatenate([np.asarray(x) for x in latencies]) * 1e3
    return {"searches_per_s": len(all_lat) * 4 / seconds, "p50_ms": float(np.percentile(all_lat, 50)),
            "p99_ms": float(np.percentile(all_lat, 99)), "publishes": publishes[0]}


def main(_):
    quick = FLAGS.quick
    seconds = FLAGS.seconds or (1.5 if quick else 4.0)
    n_bank = 5_000 if quick else 20_000
    sizes = [1_000, 5_000, 20_000] if quick else [1_000, 5_000, 20_000, 100_000]
    n_base, n_queries = (1_000, 200) if quick else (4_000, 500)
    rng = np.random.default_rng(0)
    embedder, embedder_name = load_embedder()
    base = cached_embeddings(embedder, embedder_name, [experience_text(rng) for _ in range(n_base)],
                             FLAGS.cache_dir)
    queries = cached_embeddings(embedder, embedder_name, [query_text(rng) for _ in range(n_queries)],
                                FLAGS.cache_dir)
    results = {"embedder": embedder_name, "dim": int(base.shape[1]), "bank_size": n_bank, "readers": FLAGS.readers,
               "seconds_per_phase": seconds, "writer_pause_s": FLAGS.writer_pause_s, "dtype": FLAGS.dtype,
               "latency": {}, "publish_ms": {}}
    vectors = expand(base, max(sizes + [n_bank]), rng)
    count = 16  # N*K candidates

    for mode in ["copy", "double_buffer"]:
        config = ExperienceConfig(publish_mode=mode, workers=FLAGS.readers, cap=10**7, index_dtype=FLAGS.dtype)
        with ExperienceBank(config, base.shape[1]) as bank:
            bank.bulk_load([AddEntry("t", "bench entry", v) for v in vectors[:n_bank]], timeout=600)
            bank_write(bank, np.random.default_rng(7), base)  # double buffer: the first write replays the bulk load
            search = lambda slot, q, k: bank.reader(slot).search(q, k)  # noqa: E731
            for label, write in [("no_writer", None), ("busy_writer", lambda r: bank_write(bank, r, base))]:
                results["latency"][f"{mode}/{label}"] = latency_phase(search, write, FLAGS.readers, seconds, queries,
                                                                      count, FLAGS.writer_pause_s)
    locked = LockedBank(ExperienceConfig(index_dtype=FLAGS.dtype), vectors[:n_bank])
    for label, write in [("no_writer", None), ("busy_writer", lambda r: locked.write(*write_batch(r, base), 2, r))]:
        results["latency"][f"rwlock/{label}"] = latency_phase(lambda slot, q, k: locked.search(q, k), write,
                                                              FLAGS.readers, seconds, queries, count,
                                                              FLAGS.writer_pause_s)

    for mode in ["copy", "double_buffer"]:
        for n in sizes:
            if mode == "double_buffer" and n > (5_000 if quick else 20_000):
                continue  # building 2W indexes (and replaying the bulk load once) dominates the run time
            config = ExperienceConfig(publish_mode=mode, workers=FLAGS.readers, cap=10**7, index_dtype=FLAGS.dtype)
            with ExperienceBank(config, base.shape[1]) as bank:
                bank.bulk_load([AddEntry("t", "bench entry", v) for v in vectors[:n]], timeout=1200)
                bank_write(bank, np.random.default_rng(7), base)  # warm-up (double buffer replays the bulk load)
                bank.publish_seconds.clear()
                r = np.random.default_rng(5)
                for _ in range(7):
                    bank_write(bank, r, base)
                results["publish_ms"][f"{mode}/{n}"] = 1e3 * statistics.median(bank.publish_seconds)

    lat = results["latency"]
    print(f"\nembedder={embedder_name} dim={base.shape[1]} bank={n_bank} readers={FLAGS.readers} "
          f"dtype={FLAGS.dtype} {seconds:.1f} s/phase; each search = 4 queries x {count} candidates")
    print(f"{'design/phase':28s} {'searches/s':>11s} {'p50 ms':>8s} {'p99 ms':>8s} {'publishes':>9s}")
    for key, row in lat.items():
        print(f"{key:28s} {row['searches_per_s']:11.0f} {row['p50_ms']:8.3f} {row['p99_ms']:8.3f} "
              f"{row['publishes']:9d}")
    ratios = {}
    for design in ["copy", "double_buffer", "rwlock"]:
        busy, idle = lat[f"{design}/busy_writer"], lat[f"{design}/no_writer"]
        ratios[design] = {"p99_busy_over_idle": busy["p99_ms"] / idle["p99_ms"],
                          "p50_busy_over_idle": busy["p50_ms"] / idle["p50_ms"],
                          "throughput_busy_over_idle": busy["searches_per_s"] / idle["searches_per_s"]}
        print(f"ratio {design:14s} p99 busy/idle {ratios[design]['p99_busy_over_idle']:6.2f}  "
              f"p50 busy/idle {ratios[design]['p50_busy_over_idle']:6.2f}  "
              f"throughput busy/idle {ratios[design]['throughput_busy_over_idle']:5.2f}")
    ratios["rwlock_p99_over_copy_p99_busy"] = lat["rwlock/busy_writer"]["p99_ms"] / lat["copy/busy_writer"]["p99_ms"]
    print(f"ratio rwlock/copy reader p99 with a busy writer: {ratios['rwlock_p99_over_copy_p99_busy']:.2f}")
    print("\npublish latency (writer side, batch of 4 adds + 2 updates + 2 deletes, median of 7):")
    for key, ms in results["publish_ms"].items():
        print(f"  {key:22s} {ms:8.2f} ms")
    for n in sizes:
        if f"double_buffer/{n}" in results["publish_ms"]:
            ratios[f"publish_double_over_copy_{n}"] = (results["publish_ms"][f"double_buffer/{n}"]
                                                       / results["publish_ms"][f"copy/{n}"])
            print(f"ratio double_buffer/copy publish at {n}: {ratios[f'publish_double_over_copy_{n}']:.2f}")
    results["ratios"] = ratios
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    app.run(main)
