"""Atomic save/load of the bank: round trip, and a crash in the middle of a save."""
import math
import os

import numpy as np
import pytest

from crl_jax.experience import AddEntry, ExperienceBank, ExperienceConfig, MarkTrained
from crl_jax.experience import persistence

DIM = 8


def vec(seed):
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("mode", ["copy", "double_buffer", "delta"])
def test_round_trip(tmp_path, mode):
    config = ExperienceConfig(publish_mode=mode, workers=1, per_task=True)
    path = tmp_path / "bank.npz"
    with ExperienceBank(config, DIM) as bank:
        bank.apply([AddEntry("a", "entry ä\n  indented", vec(0), 3, "prompt", "response", "call-1"),
                    AddEntry("b", "other", vec(1))])
        bank.record_retrievals([0, 0], when=12.5)
        bank.apply([MarkTrained((1,), step=7)])
        bank.save(path)
        saved = bank.snapshot
    with ExperienceBank(config, DIM) as restored:
        receipt = restored.restore(path)
        snap = restored.snapshot
        assert receipt.version == snap.version == 1
        assert [(e.id, e.task_key, e.text, e.created_step, e.source_prompt, e.source_response, e.source_call)
                for e in snap.entries.values()] == \
               [(e.id, e.task_key, e.text, e.created_step, e.source_prompt, e.source_response, e.source_call)
                for e in saved.entries.values()]
        for entry_id in saved.entries:
            np.testing.assert_array_equal(snap.entries[entry_id].embedding, saved.entries[entry_id].embedding)
            assert snap.stats[entry_id] == saved.stats[entry_id]
        assert snap.stats[1].last_retrieval_time == -math.inf and snap.stats[0].last_retrieval_time == 12.5
        assert snap.next_id == saved.next_id == 2 and snap.retrievals_folded == 2
        _, keys, sims = restored.reader(0).search(np.stack([vec(1)]), 1, task_key="b")
        assert keys[0, 0] == 1 and sims[0, 0] == pytest.approx(1.0, abs=1e-5)
        assert restored.apply([AddEntry("a", "new", vec(2))]).added_ids == (2,)


def test_interrupted_save_keeps_the_previous_save(tmp_path, monkeypatch):
    path = tmp_path / "bank.npz"
    with ExperienceBank(ExperienceConfig(workers=1), DIM) as bank:
        bank.apply([AddEntry("t", "first", vec(0))])
        bank.save(path)
        bank.apply([AddEntry("t", "second", vec(1))])
        real_write = persistence._write_payload

        def crash_midway(file, payload):
            real_write(file, payload)
            file.truncate(file.tell() // 2)  # half of the new file is on disk when we "crash"
            raise OSError("power cut")

        monkeypatch.setattr(persistence, "_write_payload", crash_midway)
        with pytest.raises(OSError, match="power cut"):
            bank.save(path)
    assert os.listdir(tmp_path) == ["bank.npz"]  # the temporary file was removed
    state = persistence.load_state(path, DIM)
    assert [e.text for e in state.entries] == ["first"]
    # A hard crash (no cleanup) leaves a stray temporary file: loading ignores it.
    (tmp_path / ".bank.npz.tmp-1-2").write_bytes(b"partial garbage")
    assert [e.text for e in persistence.load_state(path, DIM).entries] == ["first"]


def test_bad_files_raise_value_error(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable"):
        persistence.load_state(garbage, DIM)
    with ExperienceBank(ExperienceConfig(workers=1), DIM) as bank:
        bank.apply([AddEntry("t", "x", vec(0))])
        bank.save(tmp_path / "ok.npz")
    with pytest.raises(ValueError, match="dim 8, expected format 1 dim 16"):
        persistence.load_state(tmp_path / "ok.npz", 16)


def test_every_damaged_file_is_a_value_error(tmp_path):
    """Empty, cut at any length, random bytes, a zip without the header, a
    header of the wrong shape: always ValueError (never EOFError,
    zipfile.BadZipFile, KeyError...)."""
    import io
    import json
    import zipfile
    with ExperienceBank(ExperienceConfig(workers=1), DIM) as bank:
        bank.apply([AddEntry("t", f"entry {i}", vec(i % DIM)) for i in range(3)])
        bank.save(tmp_path / "ok.npz")
    whole = (tmp_path / "ok.npz").read_bytes()
    rng = np.random.default_rng(0)
    bad = {"empty": b"", "random": rng.bytes(len(whole))}
    bad.update({f"cut at {n}": whole[:n] for n in range(1, len(whole), max(1, len(whole) // 40))})
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("something.npy", b"123")
    bad["a zip of something else"] = other.getvalue()
    header = io.BytesIO()
    np.savez(header, header=np.frombuffer(json.dumps({"format": 1, "dim": DIM}).encode(), np.uint8),
             embeddings=np.zeros((0, DIM), np.float32))
    bad["a header without entries"] = header.getvalue()
    listed = io.BytesIO()
    np.savez(listed, header=np.frombuffer(b"[1, 2]", np.uint8), embeddings=np.zeros((0, DIM)))
    bad["a header that is a list"] = listed.getvalue()
    for name, data in bad.items():
        path = tmp_path / "bad.npz"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            persistence.load_state(path, DIM)
    with pytest.raises(FileNotFoundError):
        persistence.load_state(tmp_path / "missing.npz", DIM)
