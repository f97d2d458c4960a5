"""Delta publishing: layered maps against a dict, the delta bank against NumPy
brute force and against the copy bank, the O(batch) publish structure, and
merge failures."""
import numpy as np
import pytest

from crl_jax.experience import (AddEntry, BankFailedError, DeleteEntry, ExperienceBank, ExperienceConfig,
                                MarkTrained, UpdateEntry)
from crl_jax.experience.layers import GONE, LayeredMap, LayeredWriter, merged

DIM = 12


def units(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_layered_writer_and_views_match_a_dict_through_freezes_and_merges():
    rng = np.random.default_rng(0)
    reference: dict = {}
    base, frozen, active = {}, (), {}
    writer = LayeredWriter(base, frozen, active, 0)
    views = []  # (view, copy of the reference when it was taken)
    next_id = 0
    for step in range(600):
        roll = rng.random()
        if roll < 0.45 or not reference:
            reference[next_id] = writer[next_id] = f"v{next_id}"
            next_id += 1
        elif roll < 0.7:
            key = int(rng.choice(list(reference)))
            reference[key] = writer[key] = f"u{step}"
        elif roll < 0.9:
            key = int(rng.choice(list(reference)))
            old = writer[key]
            del reference[key], writer[key]
            if rng.random() < 0.3:  # an undo writes the old value back
                reference[key] = writer[key] = old
        if step % 97 == 96:  # freeze the active layer; merge the frozen one into the base
            base = merged(base, frozen[0]) if frozen else base
            frozen, active = (active,), {}
            writer = LayeredWriter(base, frozen, active, len(writer))
        assert len(writer) == len(reference)
        if step % 50 == 0:
            views.append((writer.view(), dict(reference)))
    for view, expected in views + [(writer.view(), reference)]:
        assert list(view) == sorted(expected)  # ascending ids, like the dicts of the other modes
        assert dict(view.items()) == expected and len(view) == len(expected)
        assert all(k in view for k in expected) and -1 not in view


def test_writing_back_the_lower_value_leaves_no_delta():
    base = {1: "a", 2: "b"}
    writer = LayeredWriter(base, (), {}, 2)
    old = writer[1]
    writer[1] = "x"
    del writer[2]
    writer[1] = old
    writer[2] = base[2]
    assert writer.active == {} and len(writer) == 2
    assert dict(LayeredMap(base, ({1: GONE, 3: "c"},), 2).items()) == {2: "b", 3: "c"}


def brute_force(snapshot, queries, count, task_key=None):
    entries = [e for e in snapshot.entries.values() if task_key is None or e.task_key == task_key]
    if not entries:
        return [[] for _ in queries]
    sims = np.stack([e.embedding for e in entries]) @ queries.T
    return [[entries[i].id for i in np.argsort(-sims[:, q], kind="stable")[:count]] for q in range(len(queries))]


@pytest.mark.parametrize("per_task", [False, True])
def test_delta_bank_matches_brute_force_and_the_copy_bank_across_merges(per_task):
    rng = np.random.default_rng(1 + per_task)
    config = dict(workers=2, per_task=per_task, cap=150)
    delta = ExperienceBank(ExperienceConfig(publish_mode="delta", delta_merge_at=16, **config), DIM)
    copy = ExperienceBank(ExperienceConfig(publish_mode="copy", **config), DIM)
    tasks = ["a", "b"] if per_task else ["t"]
    try:
        for step in range(60):
            ids = list(copy.snapshot.entries)
            ops = [AddEntry(tasks[int(rng.integers(len(tasks)))], f"s{step}", v) for v in units(rng, 5)]
            if len(ids) > 4:
                chosen = rng.choice(ids, 4, replace=False)
                ops += [UpdateEntry(int(chosen[0]), f"u{step}", units(rng, 1)[0]), DeleteEntry(int(chosen[1])),
                        MarkTrained((int(chosen[2]),), step)]
                delta.record_retrievals([int(chosen[3])], float(step))
                copy.record_retrievals([int(chosen[3])], float(step))
            assert delta.apply(ops).added_ids == copy.apply(ops).added_ids
            delta.flush()
            copy.flush()
            d, c = delta.snapshot, copy.snapshot
            assert list(d.entries) == list(c.entries)  # same ids in the same (ascending) order
            assert all(d.entries[i].text == c.entries[i].text for i in c.entries)
            assert dict(d.stats.items()) == dict(c.stats.items())
            queries = units(rng, 3)
            for task in tasks:
                _, keys, sims = delta.reader(step % 2).search(queries, 6, task_key=task, exact=True)
                expected = brute_force(d, queries, 6, task if per_task else None)
                for q in range(len(queries)):
                    assert [int(k) for k in keys[q] if k >= 0] == expected[q]
                    got = [d.entries[int(k)].embedding @ queries[q] for k in keys[q] if k >= 0]
                    np.testing.assert_allclose(sims[q, :len(got)], got, atol=1e-5)
        assert delta.merges >= 3  # the comparison ran across several merged bases
        delta.compact()
        assert not any(len(layer) for layer in delta.snapshot.entries.deltas)
        assert list(delta.snapshot.entries) == list(copy.snapshot.entries)
    finally:
        delta.close()
        copy.close()


def test_a_publish_below_the_threshold_does_not_touch_the_base():
    """The O(batch) property: publishes share the base maps and indexes; only the
    delta (the changed ids) is new."""
    rng = np.random.default_rng(3)
    with ExperienceBank(ExperienceConfig(publish_mode="delta", workers=1, delta_merge_at=10_000), DIM) as bank:
        bank.bulk_load([AddEntry("t", f"e{i}", v) for i, v in enumerate(units(rng, 500))])
        bank.compact()
        settled = bank.snapshot
        base_entries, base_index = settled.entries.base, settled.partitions["*"].base
        assert len(base_entries) == 500 and base_index.size == 500
        for step in range(20):
            bank.apply([AddEntry("t", f"n{step}", units(rng, 1)[0]), UpdateEntry(step, "moved", units(rng, 1)[0]),
                        DeleteEntry(400 + step)])
            snap = bank.snapshot
            assert snap.entries.base is base_entries and snap.partitions["*"].base is base_index
            assert len(snap.entries.deltas[-1]) == 3 * (step + 1)  # the changed ids, nothing else
            assert len(snap) == 500
        assert bank.merges == 1  # only the compaction


def test_a_failed_merge_fails_the_bank_loudly(monkeypatch):
    bank = ExperienceBank(ExperienceConfig(publish_mode="delta", workers=1, delta_merge_at=2), DIM)

    def broken(*args, **kwargs):
        raise RuntimeError("merger out of memory")

    monkeypatch.setattr(bank._store, "_apply_to_master", broken)
    bank.apply([AddEntry("t", f"e{i}", v) for i, v in enumerate(units(np.random.default_rng(4), 3))])
    with pytest.raises(BankFailedError, match="merger out of memory"):
        for _ in range(50):  # the writer installs the merge at its next publish
            bank.flush(timeout=5)
    with pytest.raises(BankFailedError):
        bank.close()


def test_a_query_whose_nearest_base_entries_all_changed_still_gets_its_true_neighbours():
    """Overridden base hits are dropped and the base is asked again for more: the
    top entries of the base are all updated away, and the search still returns
    the brute-force top (exercises the second, wider base search)."""
    rng = np.random.default_rng(5)
    with ExperienceBank(ExperienceConfig(publish_mode="delta", workers=1, delta_merge_at=10_000), DIM) as bank:
        vectors = units(rng, 200)
        bank.bulk_load([AddEntry("t", f"e{i}", v) for i, v in enumerate(vectors)])
        bank.compact()
        query = vectors[:1]
        nearest = np.argsort(-(vectors @ query[0]))[:30]
        far = -query[0]  # every update moves an entry to the opposite side
        bank.apply([UpdateEntry(int(i), "moved", far) for i in nearest])
        snap, keys, sims = bank.reader(0).search(query, 5, exact=True)
        assert snap.entries.base is not None and bank.merges == 1  # still the old base, 30 ids overridden
        assert [int(k) for k in keys[0]] == brute_force(snap, query, 5)[0]
        assert not set(int(k) for k in keys[0]) & set(int(i) for i in nearest)
