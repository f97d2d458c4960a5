"""Stress: reader threads search while the writer adds, updates, deletes and publishes.

Entries come in groups of GROUP ids written by one request; a group is later
updated as a whole (all texts get the same revision) or deleted as a whole.
So a consistent snapshot holds every id of a group or none, all at one
revision; a half-applied batch would break that. Every returned similarity
must equal the dot product with the entry's embedding in that same snapshot
(an index out of step with its entries, or a buffer recycled under a reader,
would break that).
"""
import threading
import time

import numpy as np
import pytest

from crl_jax.experience import AddEntry, DeleteEntry, ExperienceBank, ExperienceConfig, UpdateEntry

DIM, GROUP, READERS, PUBLISHES, MAX_SECONDS = 16, 4, 3, 60, 20.0


def random_units(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check_snapshot_consistent(snapshot, keys, sims, queries):
    for row in range(len(queries)):
        for key, sim in zip(keys[row], sims[row]):
            if key < 0:
                continue
            entry = snapshot.entries[int(key)]  # KeyError = index and entries out of step
            assert abs(float(queries[row] @ entry.embedding) - float(sim)) < 1e-4
            group, revision = entry.text.split(":")
            members = [e for e in snapshot.entries.values() if e.text.split(":")[0] == group]
            assert len(members) == GROUP and {e.text for e in members} == {f"{group}:{revision}"}


# delta_merge_at=8: the delta mode's background merges run many times during the test.
@pytest.mark.parametrize("mode,extra", [("copy", {}), ("double_buffer", {}), ("delta", {"delta_merge_at": 8})])
def test_readers_see_consistent_snapshots_while_the_writer_publishes(mode, extra):
    config = ExperienceConfig(publish_mode=mode, workers=READERS + 1, cap=10_000, stats_flush_s=0.01, **extra)
    bank = ExperienceBank(config, DIM)
    stop = threading.Event()
    errors: list[BaseException] = []
    made = [0] * READERS

    def reader(slot):
        try:
            rng = np.random.default_rng(slot)
            seen = 0
            while not stop.is_set():
                queries = random_units(rng, 3)
                snapshot, keys, sims = bank.reader(slot).search(queries, 4)
                assert snapshot.version >= seen, "versions went backwards"
                seen = snapshot.version
                check_snapshot_consistent(snapshot, keys, sims, queries)
                top = [int(k) for k in keys[:, 0] if k >= 0]
                bank.record_retrievals(top, time.time())
                made[slot] += len(top)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(READERS)]
    for t in threads:
        t.start()
    rng = np.random.default_rng(99)
    live: dict[int, list[int]] = {}  # group -> ids
    writer_slot, group, publishes = bank.reader(READERS), 0, 0
    deadline = time.monotonic() + MAX_SECONDS  # a fixed amount of work; the deadline only guards a hang
    try:
        while publishes < PUBLISHES and time.monotonic() < deadline and not errors:
            ops = [AddEntry("t", f"g{group}:0", v) for v in random_units(rng, GROUP)]
            if live and rng.random() < 0.5:
                victim = list(live)[int(rng.integers(len(live)))]
                ops += [UpdateEntry(i, f"g{victim}:{publishes}", v)
                        for i, v in zip(live[victim], random_units(rng, GROUP))]
            if len(live) > 20:
                victim = list(live)[int(rng.integers(len(live)))]
                ops += [DeleteEntry(i) for i in live.pop(victim)]
            receipt = bank.apply(ops, timeout=10)
            publishes += 1
            live[group] = list(receipt.added_ids)
            group += 1
            assert bank.snapshot.version >= receipt.version
            embeddings = np.stack([o.embedding for o in ops[:GROUP]])
            _, keys, sims = writer_slot.search(embeddings, 1, exact=True)  # acknowledged adds are searchable
            assert list(keys[:, 0]) == list(receipt.added_ids)
            np.testing.assert_allclose(sims[:, 0], 1.0, atol=1e-5)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors, errors[0]
    assert publishes == PUBLISHES
    bank.flush()
    snap = bank.snapshot
    total_counts = sum(s.retrieval_count for s in snap.stats.values())
    assert snap.retrievals_folded == sum(made) > 0
    assert total_counts + snap.dropped_retrievals == sum(made)
    if mode == "delta":
        assert bank.merges >= 5, bank.merges  # readers searched across merged bases
    bank.close(10)
