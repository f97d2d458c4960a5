"""The experience bank: operations, atomic requests, eviction, partitions, usage folding, failures."""
import concurrent.futures

import numpy as np
import pytest

from crl_jax.experience import (AddEntry, BankClosedError, BankFailedError, DeleteEntry, ExperienceBank,
                                ExperienceConfig, MarkTrained, UpdateEntry)

MODES = ["copy", "double_buffer", "delta"]
DIM = 8


def unit(i, dim=DIM):
    v = np.zeros(dim, np.float32)
    v[i % dim] = 1.0
    v[(i + 1) % dim] += 0.1 * (i // dim + 1)
    return v / np.linalg.norm(v)


def make_bank(mode, **kw):
    return ExperienceBank(ExperienceConfig(publish_mode=mode, workers=2, **kw), DIM)


@pytest.mark.parametrize("mode", MODES)
def test_add_update_delete_and_search(mode):
    with make_bank(mode) as bank:
        receipt = bank.apply([AddEntry("t", f"e{i}", unit(i)) for i in range(6)])
        assert receipt.added_ids == tuple(range(6)) and receipt.version == 1
        snap, keys, sims = bank.reader(0).search(np.stack([unit(2)]), 1)
        assert keys[0, 0] == 2 and sims[0, 0] == pytest.approx(1.0, abs=1e-5) and snap.version == 1
        receipt = bank.apply([UpdateEntry(2, "moved", unit(5 + DIM)), DeleteEntry(4)])
        snap = bank.snapshot
        assert receipt.version == 2 and snap.version == 2
        assert snap.entries[2].text == "moved" and 4 not in snap.entries and len(snap) == 5
        _, keys, sims = bank.reader(1).search(np.stack([unit(5 + DIM), unit(4)]), 2, exact=True)
        assert keys[0, 0] == 2 and sims[0, 0] == pytest.approx(1.0, abs=1e-5)
        assert 4 not in keys[1]


@pytest.mark.parametrize("mode", MODES)
def test_invalid_request_is_all_or_nothing(mode):
    with make_bank(mode) as bank:
        bank.apply([AddEntry("t", "a", unit(0))])
        bad = bank.submit([AddEntry("t", "b", unit(1)), DeleteEntry(0), DeleteEntry(99)])
        good = bank.submit([AddEntry("t", "c", unit(2))])
        with pytest.raises(ValueError, match="no entry with id 99"):
            bad.result(5)
        good.result(5)
        assert sorted(e.text for e in bank.snapshot.entries.values()) == ["a", "c"]
        _, keys, _ = bank.reader(0).search(np.stack([unit(1)]), 5, exact=True)
        assert sorted(k for k in keys[0] if k >= 0) == sorted(bank.snapshot.entries)
        for bad_ops, message in [([AddEntry("t", "  ", unit(0))], "non-empty"),
                                 ([AddEntry("t", "x", np.ones(3))], "length 8"),
                                 ([UpdateEntry(42, "x", unit(0))], "no entry"),
                                 (["not an op"], "unknown bank operation")]:
            with pytest.raises(ValueError, match=message):
                bank.apply(bad_ops)


@pytest.mark.parametrize("mode", MODES)
def test_fifo_eviction_at_cap(mode):
    with make_bank(mode, cap=4) as bank:
        bank.apply([AddEntry("t", f"e{i}", unit(i)) for i in range(3)])
        bank.record_retrievals([0, 0], when=1.0)
        bank.apply([AddEntry("t", f"e{i}", unit(i)) for i in range(3, 6)])
        snap = bank.snapshot
        assert sorted(snap.entries) == [2, 3, 4, 5]
        assert snap.retrievals_folded == 2 and snap.dropped_retrievals == 2  # entry 0 was evicted
        _, keys, _ = bank.reader(0).search(np.stack([unit(0)]), 8, exact=True)
        assert sorted(k for k in keys[0] if k >= 0) == [2, 3, 4, 5]


def test_per_task_partitions_search_only_their_task():
    with ExperienceBank(ExperienceConfig(per_task=True, workers=1), DIM) as bank:
        bank.apply([AddEntry("a", "a0", unit(0)), AddEntry("b", "b0", unit(0)), AddEntry("b", "b1", unit(1))])
        _, keys, _ = bank.reader(0).search(np.stack([unit(0)]), 4, task_key="b")
        assert sorted(k for k in keys[0] if k >= 0) == [1, 2]
        _, keys, _ = bank.reader(0).search(np.stack([unit(0)]), 4, task_key="unknown")
        assert (keys == -1).all()
        assert [e.text for e in bank.snapshot.task_entries("b")] == ["b0", "b1"]


@pytest.mark.parametrize("mode", MODES)
def test_usage_events_and_mark_trained_fold_into_stats(mode):
    with make_bank(mode) as bank:
        bank.apply([AddEntry("t", "a", unit(0)), AddEntry("t", "b", unit(1))])
        bank.record_retrievals([0, 0, 1], when=5.0)
        bank.record_retrievals([0], when=3.0)
        bank.apply([MarkTrained((1, 77), step=4)])  # 77 does not exist: skipped
        snap = bank.flush()
        stats = bank.snapshot.stats
        assert (stats[0].retrieval_count, stats[0].last_retrieval_time) == (3, 5.0)
        assert (stats[1].retrieval_count, stats[1].train_count, stats[1].last_trained_step) == (1, 1, 4)
        assert bank.snapshot.retrievals_folded == 4 and snap.version == bank.snapshot.version


def test_writer_failure_is_surfaced_not_swallowed(monkeypatch):
    bank = make_bank("copy")
    bank.apply([AddEntry("t", "a", unit(0))])

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bank._store._publishers["*"], "publish", broken)
    future = bank.submit([AddEntry("t", "b", unit(1))])
    with pytest.raises(BankFailedError) as info:
        future.result(5)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(BankFailedError):
        bank.check()
    with pytest.raises(BankFailedError):
        bank.submit([])
    with pytest.raises(BankFailedError):
        bank.close(5)
    assert not bank._thread.is_alive()


def test_double_buffer_waits_for_pinned_readers_then_fails_loudly():
    bank = ExperienceBank(ExperienceConfig(publish_mode="double_buffer", workers=1, grace_timeout_s=0.2), DIM)
    bank.apply([AddEntry("t", "a", unit(0))])  # version 1 on set A
    bank.apply([AddEntry("t", "b", unit(1))])  # version 2 on set B; A retired at version 2
    bank.reader(0)._pinned = 1  # a reader stuck on version 1, which uses set A
    future = bank.submit([AddEntry("t", "c", unit(2))])
    with pytest.raises(BankFailedError, match="still pinned"):
        future.result(5)
    bank.reader(0)._pinned = None
    with pytest.raises(BankFailedError):
        bank.close(5)


def test_close_fails_later_requests_and_validates_arguments():
    bank = make_bank("copy")
    bank.close(5)
    with pytest.raises(BankClosedError):
        bank.submit([])
    with pytest.raises(ValueError, match="reader slot"):
        bank.reader(2)
    with pytest.raises(ValueError, match="publish_mode"):
        ExperienceConfig(publish_mode="locks")
    with pytest.raises(ValueError, match="workers"):
        ExperienceConfig(workers=0)
    with pytest.raises(ValueError, match="merge_carry"):
        ExperienceConfig(merge_chunk=2, merge_carry=2)


def test_double_buffer_writer_waits_for_a_pinned_reader_then_publishes():
    bank = ExperienceBank(ExperienceConfig(publish_mode="double_buffer", workers=1), DIM)
    bank.apply([AddEntry("t", "a", unit(0))])
    bank.apply([AddEntry("t", "b", unit(1))])
    bank.reader(0)._pinned = 1  # still reading version 1, whose buffer the next publish reuses
    future = bank.submit([AddEntry("t", "c", unit(2))])
    done, _ = concurrent.futures.wait([future], timeout=0.3)
    assert not done, "the writer mutated a buffer a reader was pinned to"
    bank.reader(0)._pinned = None
    assert future.result(5).version == 3
    _, keys, _ = bank.reader(0).search(np.stack([unit(2)]), 3, exact=True)
    assert sorted(keys[0]) == [0, 1, 2]
    bank.close(5)
