"""The synchronous pipeline's retrieval and quiescence (experience.sync):
exact search ranked like the threaded path, ties by id, answers that survive
a save and restore, drain(), and the same bank from both paths."""
import json
import threading
import time

import numpy as np
import pytest

from crl_jax.experience import (AddEntry, EpisodeRecord, ExperienceBank, ExperienceConfig,
                                ExperienceManager, ExtractorReply)
from crl_jax.experience.diversification import StepClock

DIM = 4
E = np.eye(DIM, dtype=np.float32)
TABLE = {"q0": E[0], "q1": E[1], "A": E[0], "B": E[0] + E[1], "C": E[1]}


def make(table_embedder, synchronous=True, extractor=None, merger=None, clock=None, **config):
    config = ExperienceConfig(**{"workers": 2, "top_k": 1, "consolidation_context": 0, **config})
    bank = ExperienceBank(config, DIM)
    manager = ExperienceManager(bank, table_embedder(TABLE, DIM), extractor, merger,
                                clock=clock or (lambda: 1000.0), synchronous=synchronous)
    return bank, manager


def test_exact_search_ranks_by_eq6_as_computed_by_hand(table_embedder):
    bank, manager = make(table_embedder)
    with bank, manager:
        a, b, c = bank.apply([AddEntry("t", t, TABLE[t]) for t in "ABC"]).added_ids
        first = manager.retrieve("q0", k=2)  # A: 1.0, B: 0.7071, never retrieved
        assert [r.entry.text for r in first] == ["A", "B"]
        assert first[0].score == pytest.approx(1.0, abs=1e-6)
        # recorded and published before the call returned
        assert bank.snapshot.stats[a].retrieval_count == 1
        bank.record_retrievals([a, a], when=0.0)
        bank.flush()
        second = manager.retrieve("q0", k=2)
        # A: 1 - 0.4 ln 4 - 1 (recent); B: 0.70711 - 0.4 ln 2 - 1; C: 0 (never retrieved)
        assert [r.entry.text for r in second] == ["C", "A"]
        assert second[1].score == pytest.approx(1 - 0.4 * np.log(4) - 1, abs=1e-6)
        unrecorded = manager.search("q0", record=False).result(1)
        assert bank.snapshot.stats[c].retrieval_count == 1  # the unrecorded call changed nothing
        assert [r.entry.text for r in unrecorded] == ["B"]



@pytest.mark.parametrize("dropout", [False, True])
def test_exact_search_ranks_by_position_with_the_rank_score(table_embedder, dropout):
    """bank.diversity_score="rank" (the released code's Eq. 6), the first
    test's statistics: A (position 0): 0 - (0.4 ln 4 + 1); B (1): -1 - (0.4 ln 2 + 1);
    C (2): -2. With the dropout at probability 1 the recent top-1 A goes last."""
    bank, manager = make(table_embedder, diversity_score="rank", released_top1_shuffle=dropout,
                         released_shuffle_prob=1.0)
    with bank, manager:
        a, _, _ = bank.apply([AddEntry("t", t, TABLE[t]) for t in "ABC"]).added_ids
        first = manager.retrieve("q0", k=2)
        assert [r.entry.text for r in first] == ["A", "B"] and first[0].score == 0.0
        bank.record_retrievals([a, a], when=0.0)
        bank.flush()
        second = manager.retrieve("q0", k=2)
        scores = {"A": -(0.4 * np.log(4) + 1), "B": -1 - (0.4 * np.log(2) + 1), "C": -2.0}
        assert [r.entry.text for r in second] == (["C", "B"] if dropout else ["A", "C"])
        for r in second:
            assert r.score == pytest.approx(scores[r.entry.text], abs=1e-9)

def test_one_call_is_ranked_against_one_snapshot(table_embedder):
    """Several queries of one call see the same statistics: both get A, and
    both retrievals are counted once the call returns."""
    bank, manager = make(table_embedder)
    with bank, manager:
        a, _, _ = bank.apply([AddEntry("t", t, TABLE[t]) for t in "ABC"]).added_ids
        hits = [f.result(0) for f in manager.search_many(["q0", "q0"], ["", ""])]
        assert [h[0].entry.id for h in hits] == [a, a]
        assert bank.snapshot.stats[a].retrieval_count == 2


def test_ties_go_to_the_oldest_entry_and_survive_a_restore(table_embedder, tmp_path):
    """Five copies of one entry: the exact search's pool is the oldest
    copies, ties in Eq. 6 go to the older entry, and a bank restored from disk (whose
    index is rebuilt) gives the same answers as the one it was saved from."""
    clock = StepClock(0)
    bank, manager = make(table_embedder, clock=clock, oversample_n=2, recency_window_steps=1,
                         recency_clock="steps")
    twin, other = make(table_embedder, clock=StepClock(0), oversample_n=2,
                       recency_window_steps=1, recency_clock="steps")
    with bank, manager, twin, other:
        bank.apply([AddEntry("t", "A", E[0]) for _ in range(5)])
        got = []
        for step in range(3):
            clock.step = step
            got.append(manager.retrieve("q0")[0].entry.id)
        # The pool (oversample_n * k = 2) is the two oldest copies. Step 1: copy 0
        # scores 1 - 0.4 ln 2 (used, no longer recent), copy 1 scores 1. Step 2:
        # both 1 - 0.4 ln 2, the tie goes to the older.
        assert got == [0, 1, 0]
        bank.save(tmp_path / "bank.npz")
        twin.restore(tmp_path / "bank.npz")
        for step in (3, 4, 5):
            clock.step = step
            other.clock.step = step
            assert other.retrieve("q0")[0].entry.id == manager.retrieve("q0")[0].entry.id


def _scripted(delay=0.0):
    """A deterministic extractor: successful episodes add "<goal> plan", a
    failure updates the first shown entry (so related searches matter)."""
    def extractor(request):
        time.sleep(delay)
        if request.success:
            ops = [{"operation": "add", "entry": f"{request.goal} plan"}]
        elif request.shown_entries:
            ops = [{"operation": "update", "indices": [0], "entry": f"{request.goal} avoid"}]
        else:
            ops = [{"operation": "return"}]
        return ExtractorReply(f"p:{request.goal}", json.dumps(ops))
    return extractor


EPISODES = [EpisodeRecord(f"g{i % 3}", "traj", i % 4 != 1, f"t{i % 2}", step=i // 4)
            for i in range(12)]


def test_drain_returns_once_queued_consolidations_are_published(table_embedder):
    bank, manager = make(table_embedder, synchronous=False, extractor=_scripted(0.02))
    with bank, manager:
        for record in EPISODES:
            manager.submit_episode(record)
        manager.drain()
        assert manager.counters["episodes"] == len(EPISODES)
        assert len(bank.snapshot) == sum(r.success for r in EPISODES)


def test_drain_waits_for_a_slow_queue_but_not_for_a_hung_task(table_embedder):
    """The timeout bounds the wait for progress: 12 consolidations of 0.1 s on
    2 workers take ~0.6 s, longer than a 0.4 s timeout, and are waited for;
    a task that never returns is an error after the timeout."""
    bank, manager = make(table_embedder, synchronous=False, extractor=_scripted(0.1))
    with bank, manager:
        for record in EPISODES:
            manager.submit_episode(record)
        start = time.monotonic()
        manager.drain(timeout=0.4)
        assert time.monotonic() - start > 0.4 and manager.counters["episodes"] == len(EPISODES)
    release = threading.Event()

    def hung(request):
        release.wait(10)
        return ExtractorReply("p", json.dumps([{"operation": "return"}]))

    bank, manager = make(table_embedder, synchronous=False, extractor=hung)
    with bank, manager:
        manager.submit_episode(EPISODES[0])
        with pytest.raises(TimeoutError, match="no progress in 0.3 s"):
            manager.drain(timeout=0.3)
        release.set()


def test_both_paths_build_the_same_bank_from_the_same_episodes(table_embedder):
    banks = []
    for synchronous in (True, False):
        bank, manager = make(table_embedder, synchronous, extractor=_scripted(),
                             consolidation_context=1, train_batch_size=1)
        with bank, manager:
            for record in EPISODES:
                manager.submit_episode(record)
            manager.drain()
            snap = bank.snapshot
            banks.append(([(e.id, e.task_key, e.text, e.source_call) for e in snap.entries.values()],
                          manager.state_dict()["keys_made"]))
    assert banks[0] == banks[1]
    assert any(text.endswith("avoid") for _, _, text, _ in banks[0][0])  # updates happened


def test_manager_state_round_trips(table_embedder):
    bank, manager = make(table_embedder, extractor=_scripted(), train_batch_size=1)
    fresh_bank, fresh = make(table_embedder, extractor=_scripted(), train_batch_size=1)
    with bank, manager, fresh_bank, fresh:
        for record in EPISODES[:4]:
            manager.submit_episode(record)
        manager.drain()
        manager.retrieve("g0")
        state = json.loads(json.dumps(manager.state_dict()))  # what a checkpoint holds
        fresh.load_state_dict(state)
        assert fresh.counters == manager.counters
        assert json.loads(json.dumps(fresh.state_dict())) == state
        # the next key and the next tie-breaking draw continue, not restart
        assert fresh.sample_key("ask", 9) == manager.sample_key("ask", 9)
        assert fresh.exact.rng.random() == manager.exact.rng.random()
