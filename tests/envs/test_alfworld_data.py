"""ALFWorld records: the pack, the standard $ALFWORLD_DATA layout, materialising."""
import gzip
import json

import pytest

from crl_jax.envs import alfworld_data as data
from crl_jax.envs.alfworld_real import real_engine_available
from tests.envs.alfworld_minigame import RECORD

needs_pack = pytest.mark.skipif(not data.pack_available("valid_unseen"),
                                reason=f"ALFWorld pack not found at {data.default_pack_dir()}: "
                                       "build one from ALFWorld's download and set "
                                       "$CRL_ALFWORLD_PACK (BUILD.md, Data)")
needs_alfworld = pytest.mark.skipif(not real_engine_available(),
                                    reason="alfworld==0.4.2 not installed (its domain and grammar "
                                           "files are needed to build game files)")


@needs_pack
@pytest.mark.parametrize("split", data.SPLITS)
def test_pack_split_sizes_and_fields(split):
    records = data.load_pack(split)
    assert len(records) == data.SPLIT_SIZES[split]
    assert len({r.id for r in records}) == len(records)
    for r in records[:50]:
        assert r.split == split and r.id.startswith(f"json_2.1.1/{split}/")
        assert r.task_type in data.TASK_TYPES and r.task and "(:goal" in r.pddl_problem
        assert r.id.split("/")[2].startswith(r.task_type)


def test_pack_location_follows_env(tmp_path, monkeypatch):
    line = json.dumps(RECORD.to_json()) + "\n"
    with gzip.open(tmp_path / "games-valid_seen.jsonl.gz", "wt") as f:
        f.write(line)
    monkeypatch.setenv("CRL_ALFWORLD_PACK", str(tmp_path))
    assert data.default_pack_dir() == tmp_path
    assert list(data.iter_pack("valid_seen")) == [RECORD]
    assert not data.pack_available("train")
    with pytest.raises(FileNotFoundError, match="CRL_ALFWORLD_PACK"):
        list(data.iter_pack("train"))


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="unknown ALFWorld split"):
        data.pack_path("test")
    with pytest.raises(ValueError, match="source must be"):
        data.load_games("valid_seen", source="web")
    bad = RECORD.to_json() | {"task_type": "slice_things"}
    with pytest.raises(ValueError, match="unknown task_type"):
        data.GameRecord.from_json(bad)
    with pytest.raises(ValueError, match="lacks fields"):
        data.GameRecord.from_json({"id": "x"})


@needs_alfworld
def test_materialise_then_read_standard_layout(tmp_path, monkeypatch):
    records = [RECORD.__class__(**{**RECORD.__dict__, "id": f"json_2.1.1/valid_seen/{name}/trial_0",
                                    "split": "valid_seen"})
               for name in ("pick_cool_then_place_in_recep-Apple-None-CounterTop-1",
                            "pick_cool_then_place_in_recep-Apple-None-CounterTop-2")]
    for rec in records:
        game_file = data.materialise(rec, tmp_path)
        game = json.loads(game_file.read_text())
        assert game["solvable"] and game["pddl_problem"] == rec.pddl_problem
        assert "Your task is to: put a cool apple in countertop." in game["grammar"]
        assert "UNKNOWN GOAL" not in game["grammar"] and "move {o} to {r}" in game["grammar"]
        traj = json.loads((game_file.parent / "traj_data.json").read_text())
        assert traj == {"task_type": rec.task_type, "pddl_params": rec.params}
    # ALFWorld's collection filters: 'Sliced' folders and unsolvable games are skipped.
    sliced = data.materialise(records[0].__class__(**{**records[0].__dict__,
                              "id": "json_2.1.1/valid_seen/x-Sliced-1/trial_0"}), tmp_path)
    assert sliced.exists()
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert data.iter_data_dir("valid_seen") is not None
    assert tuple(data.iter_data_dir("valid_seen")) == tuple(records)
    monkeypatch.setenv("CRL_ALFWORLD_PACK", str(tmp_path / "nowhere"))
    assert data.load_games("valid_seen") == tuple(records)
    # The pack built from that download holds the same games.
    for split in ("train", "valid_unseen"):
        (tmp_path / "json_2.1.1" / split).mkdir(parents=True)
    assert data.main(["--out", str(tmp_path / "pack")]) == 0
    assert data.load_pack("valid_seen", tmp_path / "pack") == tuple(records)
    assert data.load_pack("train", tmp_path / "pack") == ()
