"""experiments/diagnostics/extractor_buffer.py on hand-written records: the
most rewarded samples held and the updates logged, per merge cadence and
batch; runs without experience or without metrics are left out."""
import json

from experiments.diagnostics import extractor_buffer


def _run(root, name, mode, merge_every, batch, rows, credit=None):
    run = root / name
    run.mkdir()
    bank = {"train_batch_size": batch, **({"merge_credit": credit} if credit else {})}
    (run / "config.json").write_text(json.dumps({"experience": {
        "mode": mode, "merge_every": merge_every, "merger": "lessons", "bank": bank}}))
    if rows is not None:
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_group_says_how_full_its_buffers_got_and_who_updated(tmp_path, capsys):
    p = "alfworld_households_cpu"
    _run(tmp_path, f"{p}-s0-a", "comp_rl", 1, 16,
         [{"step": 1, "extractor/buffer_ready": 2}, {"step": 2, "extractor/buffer_ready": 1}])
    _run(tmp_path, f"{p}-s1-a", "comp_rl", 1, 16, [{"step": 1, "extractor/buffer_ready": 5}])
    _run(tmp_path, f"{p}-s0-b", "comp_rl", 5, 16,
         [{"step": 1, "extractor/buffer_ready": 20, "extractor/updates": 1},
          {"step": 2, "extractor/buffer_ready": 9, "extractor/updates": 2}])
    _run(tmp_path, f"{p}-s2-a", "comp_rl", 1, 16,  # its merged lessons credit their writers
         [{"step": 1, "extractor/buffer_ready": 30, "extractor/updates": 1}], credit="sources")
    _run(tmp_path, f"{p}-s0-c", "none", 5, 16, [{"step": 1}])  # no extractor: left out
    _run(tmp_path, f"{p}-s0-d", "comp_rl", 5, 16, None)  # no metrics yet: left out
    records = extractor_buffer.buffer_records(str(tmp_path), p)
    assert [(r.name[-4:], r.most_ready, r.updates) for r in records] == [
        ("s0-a", 2, 0), ("s0-b", 20, 3), ("s1-a", 5, 0), ("s2-a", 30, 1)]
    assert extractor_buffer.group_lines(records) == [
        "merge_every=1 merger=lessons merge_credit=none batch=16: 2 runs, at most 5 rewarded "
        "samples held, 0 updated",
        "merge_every=1 merger=lessons merge_credit=sources batch=16: 1 runs, at most 30 rewarded "
        "samples held, 1 updated",
        "merge_every=5 merger=lessons merge_credit=none batch=16: 1 runs, at most 20 rewarded "
        "samples held, 1 updated"]
    assert extractor_buffer.main([f"--root={tmp_path}", "--runs", f"{p}-s0-b", f"{p}-s0-c"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == f"{p}-s0-b: merge_every=5 batch=16 at most 20 rewarded samples held, 3 updates"
    assert out[-1] == f"{p}-s0-c: not a Comp. RL run with metrics here"
    assert extractor_buffer.main([f"--root={tmp_path}", "--preset=minihack_room_cpu"]) == 1
