"""The experience manager: Eq. 6 in the search path, cache, batching, timeouts, errors, background track."""
import json
import threading


import numpy as np
import pytest

from crl_jax.experience import (AddEntry, EpisodeRecord, ExperienceBank, ExperienceConfig, ExperienceManager,
                                ExtractorReply, ManagerClosedError, ManagerFailedError)

DIM = 4
E = np.eye(DIM, dtype=np.float32)


def make(table_embedder, extractor=None, merger=None, clock=None, **config):
    config = ExperienceConfig(**{"workers": 2, "top_k": 1, "consolidation_context": 0, **config})
    embedder = table_embedder({"q0": E[0], "q1": E[1], "A": E[0], "B": E[0] + E[1], "C": E[1]}, DIM)
    bank = ExperienceBank(config, DIM)
    manager = ExperienceManager(bank, embedder, extractor, merger, clock=clock or (lambda: 1000.0))
    return bank, manager, embedder


def add_abc(bank):
    return bank.apply([AddEntry("t", text, E[0] if text == "A" else (E[0] + E[1]) / np.sqrt(2) if text == "B"
                                else E[1]) for text in "ABC"]).added_ids


def test_search_applies_eq6_with_snapshot_statistics(table_embedder):
    bank, manager, _ = make(table_embedder)
    with bank, manager:
        a, b, c = add_abc(bank)
        first = manager.retrieve("q0", k=2)  # A: 1.0, B: 0.7071, never retrieved
        assert [r.entry.text for r in first] == ["A", "B"]
        assert first[0].score == pytest.approx(1.0, abs=1e-5)
        bank.record_retrievals([a, a], when=0.0)  # old (outside the window); the search above added one each
        bank.flush()
        assert bank.snapshot.stats[a].retrieval_count == 3 and bank.snapshot.stats[b].retrieval_count == 1
        second = manager.retrieve("q0", k=2)
        # A: 1 - 0.4 ln 4 - 1 = -0.5545 (retrieved at t=1000, recent); B: 0.70711 - 0.4 ln 2 - 1 = -0.5702;
        # C: 0 (orthogonal, never retrieved). The oversampled pool (N*K) holds all three.
        assert [r.entry.text for r in second] == ["C", "A"]
        assert second[0].score == pytest.approx(0.0, abs=1e-5)
        assert second[1].score == pytest.approx(1 - 0.4 * np.log(4) - 1, abs=1e-5)


def test_window_and_lambda(table_embedder):
    bank, manager, _ = make(table_embedder, clock=lambda: 10_000.0)
    with bank, manager:
        a, _, _ = add_abc(bank)
        bank.record_retrievals([a] * 3, when=0.0)
        bank.flush()
        # A: 1 - 0.4 ln 4 = 0.4455 (not recent) < B: 0.7071
        assert [r.entry.text for r in manager.search("q0", record=False).result(5)] == ["B"]


def test_cache_hits_skip_the_embedder_and_lru_evicts(table_embedder):
    bank, manager, embedder = make(table_embedder, cache_size=1)
    with bank, manager:
        add_abc(bank)
        for query in ["q0", "q0", "q1", "q0"]:
            manager.retrieve(query)
        assert embedder.calls == [["q0"], ["q1"], ["q0"]]
        assert manager.search_path.cache.hits == 1


def test_batching_full_batches_leave_at_once_and_texts_are_embedded_once(table_embedder):
    bank, manager, embedder = make(table_embedder, batch_size=16, max_wait_s=30.0)
    with bank:
        add_abc(bank)
        embedder.gate = threading.Event()
        first = [manager.search(f"q{i % 2}") for i in range(16)]  # full: no 30 s wait
        assert embedder.entered.wait(10)
        later = [manager.search(f"text {i}") for i in range(20)]  # queued while the embedder is busy
        embedder.gate.set()
        for future in first + later[:16]:
            assert len(future.result(10)) == 1
        assert embedder.calls[0] == ["q0", "q1"]
        assert embedder.calls[1] == [f"text {i}" for i in range(16)]
        assert manager.search_path.batches == [16, 16]
        manager.close(10)  # the last 4 were waiting for more queries: close serves them, then stops
        assert all(len(f.result(1)) == 1 for f in later[16:])
        assert manager.search_path.batches == [16, 16, 4]


def test_timeout_and_embedder_errors_reach_the_caller(table_embedder):
    bank, manager, embedder = make(table_embedder)
    with bank:
        add_abc(bank)
        embedder.gate = threading.Event()
        stuck = manager.search("q0")
        with pytest.raises(TimeoutError):
            stuck.result(timeout=0.05)
        embedder.error = RuntimeError("encoder crashed")
        embedder.gate.set()
        with pytest.raises(RuntimeError, match="encoder crashed"):
            stuck.result(5)
        assert [r.entry.text for r in manager.retrieve("q1")] == ["C"]  # the path keeps serving
        manager.close(5)
        assert not any(t.is_alive() for t in manager.search_path._threads)
        with pytest.raises(ManagerClosedError):
            manager.search("q0")


def scripted_extractor(responses):
    seen = []

    def extractor(request):
        seen.append(request)
        return ExtractorReply(f"prompt {len(seen)}", responses[len(seen) - 1])
    return extractor, seen


def test_consolidation_applies_valid_operations_and_counts_malformed(table_embedder):
    responses = [
        json.dumps([{"operation": "add", "entry": {"title": "Key", "content": "pick up the key"}},
                    {"operation": "update", "indices": [7], "entry": "x"}]),
        "I could not decide",  # malformed: no JSON
        json.dumps([{"operation": "update", "indices": [0], "entry": "Key v2"}, {"operation": "return"}]),
    ]
    extractor, seen = scripted_extractor(responses)
    bank, manager, _ = make(table_embedder, extractor=extractor, train_batch_size=1)
    with bank, manager:
        r1 = manager.submit_episode(EpisodeRecord("goal", "traj", True, "t", step=1)).result(5)
        assert r1.added_ids == (0,) and len(r1.rejected) == 1 and "out of range" in r1.rejected[0]
        entry = bank.snapshot.entries[0]
        assert (entry.text, entry.source_prompt, entry.source_call) == ("Key\npick up the key", "prompt 1",
                                                                        r1.sample_key)
        r2 = manager.submit_episode(EpisodeRecord("goal", "traj", False, "t", guiding_entry_id=0)).result(5)
        assert r2.sample_key is None and r2.rejected == ("no JSON operations found",)
        r3 = manager.submit_episode(EpisodeRecord("goal", "traj", True, "t", guiding_entry_id=0)).result(5)
        assert r3.updated_ids == (0,) and bank.snapshot.entries[0].text == "Key v2"
        assert seen[2].shown_entries[0].id == 0  # the guiding entry is shown first
        assert manager.counters["ops_rejected"] == 2 and manager.counters["calls_malformed"] == 2
        assert manager.counters["rejected_bad_indices"] == manager.counters["rejected_no_json"] == 1
        # r(m) of the first call: the two episodes its entry guided, -1 and +1.
        assert manager.training_buffer.sample(r1.sample_key).outcomes == [-1.0, 1.0]
        batch = manager.draw_training_batch(step=3)
        assert [(i.key, i.reward, i.weight) for i in batch] == [(r1.sample_key, 0.0, 1.0)]
        bank.flush()
        assert bank.snapshot.stats[0].train_count == 1


def test_extractor_crash_is_surfaced_and_shutdown_is_clean(table_embedder):
    def extractor(request):
        raise MemoryError("extractor OOM")

    bank, manager, _ = make(table_embedder, extractor=extractor)
    future = manager.submit_episode(EpisodeRecord("g", "t", True))
    with pytest.raises(MemoryError):
        future.result(5)
    with pytest.raises(ManagerFailedError):
        manager.check()
    with pytest.raises(ManagerFailedError):
        manager.submit_episode(EpisodeRecord("g", "t", True))
    with pytest.raises(ManagerFailedError):
        manager.close(5)
    assert not any(t.is_alive() for t in manager.search_path._threads)
    bank.close(5)


def test_merge_in_chunks_with_carry(table_embedder):
    windows = []

    def dedupe(texts):
        windows.append(list(texts))
        return list(dict.fromkeys(texts))

    bank, manager, _ = make(table_embedder, merger=dedupe, merge_chunk=5, merge_carry=1)
    with bank, manager:
        ids = bank.apply([AddEntry("t", t, E[i % DIM]) for i, t in enumerate("aabcbcd")]).added_ids
        bank.apply([AddEntry("other", "a", E[0])])
        report = manager.merge("t", step=2).result(5)
        assert windows == [list("aabcb"), list("ccd")]
        assert report.kept_ids == (ids[0], ids[2], ids[3], ids[6]) and report.added_ids == ()
        assert report.deleted_ids == (ids[1], ids[4], ids[5])
        assert [e.text for e in bank.snapshot.task_entries("t")] == list("abcd")
        assert len(bank.snapshot.task_entries("other")) == 1


def test_merge_new_text_and_malformed_output(table_embedder):
    outputs = iter([["a and b"], "not a list"])
    bank, manager, _ = make(table_embedder, merger=lambda texts: next(outputs), merge_chunk=2, merge_carry=0)
    with bank, manager:
        bank.apply([AddEntry("t", t, E[i]) for i, t in enumerate("abc")])
        report = manager.merge("t").result(5)
        assert report.added_ids == (3,) and report.deleted_ids == (0, 1) and len(report.rejected) == 1
        assert sorted(e.text for e in bank.snapshot.task_entries("t")) == ["a and b", "c"]


def test_search_and_ask_rewrites_and_keeps_the_exchange(table_embedder):
    extractor, seen = scripted_extractor(['{"entry": {"title": "Rewritten", "content": "for here"}}'])
    bank, manager, _ = make(table_embedder, extractor=extractor)
    with bank, manager:
        add_abc(bank)
        result = manager.search_and_ask("q1", step=4).result(5)
        assert result.text == "Rewritten\nfor here" and result.entry.text == "C"
        assert seen[0].kind == "ask" and seen[0].query == "q1"
        sample = manager.training_buffer.sample(result.sample_key)
        assert (sample.prompt, sample.kind, sample.created_step) == ("prompt 1", "ask", 4)
        assert manager.training_buffer.credit(result.sample_key, True)


def test_manager_validates_its_inputs(table_embedder):
    bank, manager, _ = make(table_embedder)
    with bank, manager:
        with pytest.raises(ValueError, match="query must be a str"):
            manager.search(["q0"])
        with pytest.raises(ValueError, match="without an extractor"):
            manager.submit_episode(EpisodeRecord("g", "t", True))
        with pytest.raises(ValueError, match="k must be"):
            manager.search("q0", k=0)
    small = ExperienceBank(ExperienceConfig(workers=1), DIM)
    with pytest.raises(ValueError, match="reader slots"):
        ExperienceManager(small, table_embedder({}, DIM), config=ExperienceConfig(workers=3))
    small.close(5)


def test_a_recency_window_in_steps_gives_eq6_the_numpy_penalties(table_embedder):
    """recency_clock="steps": the manager's clock is the actor step; an entry
    retrieved during the last W steps is penalised exactly as the NumPy
    formula says, and evaluation's unrecorded searches change nothing."""
    config = ExperienceConfig(workers=2, top_k=1, consolidation_context=0, recency_clock="steps",
                              recency_window_steps=2)
    embedder = table_embedder({"q0": E[0], "A": E[0], "B": E[0] + E[1], "C": E[1]}, DIM)
    bank = ExperienceBank(config, DIM)
    manager = ExperienceManager(bank, embedder, config=config)
    with bank, manager:
        a, b, c = add_abc(bank)
        manager.set_actor_step(3)
        assert manager.retrieve("q0")[0].entry.text == "A"  # recorded at step 3
        bank.flush()
        for _ in range(3):  # evaluation: not counted as use
            manager.search("q0", record=False).result(5)
        bank.flush()
        assert bank.snapshot.stats[a].retrieval_count == 1
        assert bank.snapshot.stats[a].last_retrieval_time == 3.0

        def numpy_eq6(step):
            sims = np.array([1.0, 1 / np.sqrt(2), 0.0])
            counts = np.array([1.0, 0.0, 0.0])
            last = np.array([3.0, -np.inf, -np.inf])
            return sims - 0.4 * np.log1p(counts) - ((step - last) < 2).astype(float)

        for step in (3, 4, 5):  # window 2: A is recent at steps 3 and 4, not at 5
            manager.set_actor_step(step)
            got = {r.entry.text: r.score for r in manager.search("q0", k=3, record=False).result(5)}
            want = dict(zip("ABC", numpy_eq6(step)))
            assert got == pytest.approx(want, abs=1e-5), step
