"""Benchmark of the experience bank: snapshot publishing vs a reader/writer lock.

    .venv/bin/python experiments/benchmarks/bench_experience.py --quick [--scale_sizes=100000,1000000] [--json out.json]

Measures, in one process (ratios only; these machines swing about 2x):
1. Reader search latency (p50/p99) and throughput with no writer and with a
   writer publishing continuously, for the three snapshot modes (copy on
   publish, double buffer, delta layers) and for the paper's design: one index
   behind a reader/writer lock (implemented here as the baseline).
2. Publish latency (writer side, one batch of 8 operations) against bank size.
3. At scale (--scale_sizes; hashing-embedder vectors of generated texts, so
   embedding does not dominate): the delta mode's publish latency against its
   latency at 1k entries, and reader p99 idle / with a busy writer for the
   delta mode and the lock baseline side by side. Both search the same HNSW
   graph: the baseline's index is a copy of the delta bank's merged base.

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
import threading
import time

import numpy as np
from absl import app, flags

from crl_jax.experience import AddEntry, ExperienceBank, ExperienceConfig, HashingEmbedder
from usearch.index import Index

from experiments.benchmarks.bank_writers import BankWriter, LockedBank, write_batch

FLAGS = flags.FLAGS
MODES = ["copy", "double_buffer", "delta"]
flags.DEFINE_bool("quick", False, "small sizes: under ~2 minutes on 2 cores once embeddings are cached")
flags.DEFINE_string("json", None, "write all numbers to this JSON file")
flags.DEFINE_string("cache_dir", "/tmp/crl_jax_bench_cache", "where embeddings are cached")
flags.DEFINE_integer("readers", 4, "reader threads (= search workers W)")
flags.DEFINE_float("seconds", None, "seconds per latency phase (default 4, quick 1.5)")
flags.DEFINE_float("writer_pause_s", 0.01, "pause between the busy writer's publishes")
flags.DEFINE_string("dtype", "f32", "usearch dtype: f32 or bf16")
flags.DEFINE_list("scale_sizes", None, "bank sizes of the scale section (default: none with --quick, "
                  "else 100000,1000000)")
flags.DEFINE_integer("scale_dim", 128, "hashing-embedder dimension of the scale section")

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
    except Exception as exc:
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
        except BaseException as exc:
            errors.append(exc)

    def writer():
        rng = np.random.default_rng(1234)
        try:
            while not stop.is_set():
                write(rng)
                publishes[0] += 1
                time.sleep(writer_pause)
        except BaseException as exc:
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


def snapshot_bank(mode, n, vectors, dim, timeout=3600):
    """A bank of n entries, settled: delta mode compacted into its base, the others warmed up."""
    config = ExperienceConfig(publish_mode=mode, workers=FLAGS.readers, cap=10**8, index_dtype=FLAGS.dtype)
    bank = ExperienceBank(config, dim)
    bank.bulk_load([AddEntry("t", "bench entry", v) for v in vectors[:n]], timeout=timeout)
    bank.compact(timeout=timeout)
    return bank


def latency_section(vectors, pool, queries, n_bank, seconds, count):
    out = {}
    for mode in MODES:
        with snapshot_bank(mode, n_bank, vectors, pool.shape[1]) as bank:
            writer = BankWriter(bank, pool)
            writer(np.random.default_rng(7))  # double buffer: the first write replays the bulk load
            search = lambda slot, q, k: bank.reader(slot).search(q, k)
            for label, write in [("no_writer", None), ("busy_writer", writer)]:
                out[f"{mode}/{label}"] = latency_phase(search, write, FLAGS.readers, seconds, queries, count,
                                                       FLAGS.writer_pause_s)
    locked = LockedBank(ExperienceConfig(index_dtype=FLAGS.dtype), vectors[:n_bank])
    out.update(lock_phases(locked, pool, queries, seconds, count, prefix="rwlock"))
    return out


def lock_phases(locked, pool, queries, seconds, count, prefix):
    """Reader latency of the lock baseline, idle and with its busy writer."""
    out = {}
    for label, write in [("no_writer", None), ("busy_writer", lambda r: locked.write(*write_batch(r, pool), 2, r))]:
        out[f"{prefix}/{label}"] = latency_phase(lambda slot, q, k: locked.search(q, k), write, FLAGS.readers,
                                                 seconds, queries, count, FLAGS.writer_pause_s)
    return out


def publish_ms(bank, pool, repeats=7) -> float:
    """Median writer-side publish latency of the standard batch."""
    writer = BankWriter(bank, pool)
    writer(np.random.default_rng(7))  # warm-up (double buffer replays the bulk load)
    bank.publish_seconds.clear()
    rng = np.random.default_rng(5)
    for _ in range(repeats):
        writer(rng)
    return 1e3 * statistics.median(bank.publish_seconds)


def publish_section(vectors, pool, sizes, quick):
    out = {}
    for mode in MODES:
        for n in sizes:
            if mode == "double_buffer" and n > (5_000 if quick else 20_000):
                continue  # building 2W indexes (and replaying the bulk load once) dominates the run time
            with snapshot_bank(mode, n, vectors, pool.shape[1]) as bank:
                out[f"{mode}/{n}"] = publish_ms(bank, pool)
    return out


def scale_section(sizes, seconds, count):
    """Delta mode against the lock baseline at 100k-1M entries (hashing embeddings)."""
    rng = np.random.default_rng(11)
    embedder = HashingEmbedder(FLAGS.scale_dim)
    pool = embedder.embed([experience_text(rng) for _ in range(20_000)])
    queries = embedder.embed([query_text(rng) for _ in range(500)])
    vectors = expand(pool, max(sizes), rng)
    out = {"dim": FLAGS.scale_dim, "publish_ms": {}, "latency": {}, "build_s": {}, "lock_write_ms": {}}
    for n in [1_000] + sizes:
        started = time.perf_counter()
        with snapshot_bank("delta", n, vectors, FLAGS.scale_dim) as bank:
            out["build_s"][n] = time.perf_counter() - started
            print(f"scale: {n} entries loaded and merged in {out['build_s'][n]:.0f} s "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
            out["publish_ms"][n] = publish_ms(bank, pool, repeats=15)
            if n == 1_000:
                continue
            # The baseline searches a copy of the same HNSW graph (no second 1M-entry build).
            base = bank.snapshot.partitions["*"].base
            locked = LockedBank(None, vectors[:len(bank.snapshot)], index=Index.restore(base.keepalive))
            search = lambda slot, q, k: bank.reader(slot).search(q, k)
            writer = BankWriter(bank, pool)
            for label, write in [("no_writer", None), ("busy_writer", writer), ("busy_writer+merge", writer)]:
                merges = bank.merges
                if label.endswith("+merge"):  # the worst case: a background merge during the phase
                    bank.compact(wait=False)
                out["latency"][f"delta/{n}/{label}"] = latency_phase(search, write, FLAGS.readers, seconds,
                                                                     queries, count, FLAGS.writer_pause_s)
                out["latency"][f"delta/{n}/{label}"]["merges"] = bank.merges - merges
        out["latency"].update(lock_phases(locked, pool, queries, seconds, count, prefix=f"rwlock/{n}"))
        out["lock_write_ms"][n] = 1e3 * statistics.median(locked.write_seconds)
    return out


def print_latency(lat):
    print(f"{'design/phase':34s} {'searches/s':>11s} {'p50 ms':>8s} {'p99 ms':>8s} {'publishes':>9s} "
          f"{'merges':>6s}")
    for key, row in lat.items():
        print(f"{key:34s} {row['searches_per_s']:11.0f} {row['p50_ms']:8.3f} {row['p99_ms']:8.3f} "
              f"{row['publishes']:9d} {row.get('merges', '-'):>6}")


def main(_):
    quick = FLAGS.quick
    seconds = FLAGS.seconds or (1.5 if quick else 4.0)
    n_bank = 5_000 if quick else 20_000
    sizes = [1_000, 5_000, 20_000] if quick else [1_000, 5_000, 20_000, 100_000]
    scale_sizes = [int(x) for x in (FLAGS.scale_sizes if FLAGS.scale_sizes is not None
                                    else ([] if quick else ["100000", "1000000"]))]
    n_base, n_queries = (1_000, 200) if quick else (4_000, 500)
    load_before = os.getloadavg()[0]
    print(f"load average before the run: {load_before:.2f}")
    if load_before > 1.0:
        print("WARNING: load average above 1: other work is running; ratios taken now are not results")
    rng = np.random.default_rng(0)
    embedder, embedder_name = load_embedder()
    base = cached_embeddings(embedder, embedder_name, [experience_text(rng) for _ in range(n_base)],
                             FLAGS.cache_dir)
    queries = cached_embeddings(embedder, embedder_name, [query_text(rng) for _ in range(n_queries)],
                                FLAGS.cache_dir)
    results = {"embedder": embedder_name, "dim": int(base.shape[1]), "bank_size": n_bank, "readers": FLAGS.readers,
               "seconds_per_phase": seconds, "writer_pause_s": FLAGS.writer_pause_s, "dtype": FLAGS.dtype,
               "load_before": load_before}
    vectors = expand(base, max(sizes + [n_bank]), rng)
    count = 16  # N*K candidates
    results["latency"] = latency_section(vectors, base, queries, n_bank, seconds, count)
    results["publish_ms"] = publish_section(vectors, base, sizes, quick)
    if scale_sizes:
        results["scale"] = scale_section(scale_sizes, seconds, count)
    results["load_after"] = os.getloadavg()[0]

    lat = results["latency"]
    print(f"\nembedder={embedder_name} dim={base.shape[1]} bank={n_bank} readers={FLAGS.readers} "
          f"dtype={FLAGS.dtype} {seconds:.1f} s/phase; each search = 4 queries x {count} candidates")
    print_latency(lat)
    ratios = {}
    for design in MODES + ["rwlock"]:
        busy, idle = lat[f"{design}/busy_writer"], lat[f"{design}/no_writer"]
        ratios[design] = {"p99_busy_over_idle": busy["p99_ms"] / idle["p99_ms"],
                          "p50_busy_over_idle": busy["p50_ms"] / idle["p50_ms"],
                          "throughput_busy_over_idle": busy["searches_per_s"] / idle["searches_per_s"]}
        print(f"ratio {design:14s} p99 busy/idle {ratios[design]['p99_busy_over_idle']:6.2f}  "
              f"p50 busy/idle {ratios[design]['p50_busy_over_idle']:6.2f}  "
              f"throughput busy/idle {ratios[design]['throughput_busy_over_idle']:5.2f}")
    for mode in MODES:
        ratios[f"rwlock_p99_over_{mode}_p99_busy"] = (lat["rwlock/busy_writer"]["p99_ms"]
                                                      / lat[f"{mode}/busy_writer"]["p99_ms"])
        print(f"ratio rwlock/{mode} reader p99 with a busy writer: "
              f"{ratios[f'rwlock_p99_over_{mode}_p99_busy']:.2f}")
    print("\npublish latency (writer side, batch of 4 adds + 2 updates + 2 deletes, median of 7):")
    for key, ms in results["publish_ms"].items():
        print(f"  {key:22s} {ms:8.2f} ms")
    if scale_sizes:
        scale = results["scale"]
        print(f"\nat scale (delta mode, HashingEmbedder({scale['dim']}) vectors, median publish of 15):")
        print_latency(scale["latency"])
        for n in scale_sizes:
            publish_ratio = scale["publish_ms"][n] / scale["publish_ms"][1_000]
            p99 = {d: scale["latency"][f"{d}/{n}/busy_writer"]["p99_ms"] for d in ("delta", "rwlock")}
            merging = scale["latency"][f"delta/{n}/busy_writer+merge"]["p99_ms"]
            ratios[f"scale_{n}"] = {"publish_over_1k": publish_ratio, "rwlock_p99_over_delta_p99_busy":
                                    p99["rwlock"] / p99["delta"],
                                    "rwlock_p99_over_delta_p99_busy_merging": p99["rwlock"] / merging}
            print(f"  {n:>9,d} entries: publish {scale['publish_ms'][n]:.2f} ms = {publish_ratio:.2f}x "
                  f"the 1k bank's {scale['publish_ms'][1_000]:.2f} ms; lock write {scale['lock_write_ms'][n]:.2f}"
                  f" ms; reader p99 with a busy writer: lock {p99['rwlock']:.2f} ms / delta {p99['delta']:.2f} ms"
                  f" = {p99['rwlock'] / p99['delta']:.2f} (a merge running: delta {merging:.2f} ms, "
                  f"{p99['rwlock'] / merging:.2f})")
    print(f"load average after the run: {results['load_after']:.2f}")
    results["ratios"] = ratios
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(results, f, indent=2, default=str)


if __name__ == "__main__":
    app.run(main)
