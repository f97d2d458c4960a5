"""The entry_quality figure: its per-run row from hand-made metrics rows, and
the figure drawn from fake records of both presets' arms."""
import json
import math
import os

import pytest

from experiments.figures import common


def _rows(f1s, reads, updates):
    """Metrics rows: pool F1 at steps 5, 10, ...; a read-entry F1 every step."""
    rows = []
    for step in range(1, len(reads) + 1):
        r = {"step": step, "time": 0.0, "train/success": 0.5, "train/entry_step_f1": reads[step - 1]}
        if step % 5 == 0:
            r.update({"extractor/pool_step_f1": f1s[step // 5 - 1],
                      "extractor/pool_exact": f1s[step // 5 - 1] / 2})
        if updates and step >= 3:
            r["extractor/updates"] = updates
        rows.append(r)
    return rows


def test_quality_row_takes_first_and_last_evaluation_and_read_means():
    from experiments.studies.entry_quality import quality_row
    reads = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    q = quality_row(_rows([0.6, 0.9], reads, updates=2))
    assert q["updates"] == 16  # 2 a step from step 3 to 10
    assert (q["f1 first"], q["f1 last"]) == (0.6, 0.9) and q["rise"] == pytest.approx(0.3)
    assert (q["exact first"], q["exact last"]) == (0.3, 0.45)
    assert q["read first 5"] == pytest.approx(0.2) and q["read last 5"] == pytest.approx(0.7)
    # a fixed extractor: no updates; a run without evaluations: nan, not 0
    bare = quality_row([{"step": 1, "train/entry_step_f1": 0.5}])
    assert bare["updates"] == 0 and math.isnan(bare["rise"]) and bare["read last 5"] == 0.5


def gained_title(arm):
    from experiments.studies import entry_quality
    return dict(entry_quality.PRESETS)[arm.preset]


def test_entry_quality_draws_both_presets_from_their_own_runs(tmp_path):
    from experiments.studies import entry_quality
    root, out = tmp_path / "runs", tmp_path / "out"
    arms = entry_quality.arms("full")
    assert {a.preset for a in arms} == {"alfworld_cpu", "minihack_room_cpu"}
    assert len(arms) == 12 and entry_quality.arms("quick") == []
    for a in arms:
        # the fixed extractor's F1 is flat; Comp. RL's rises on ALFWorld only
        comp = a.label == entry_quality.COMP
        rise = 0.2 if comp and a.preset == "alfworld_cpu" else 0.0
        steps = common.expected_steps(a)
        f1s = [0.5 + rise * i / (steps // 5 - 1) for i in range(steps // 5)]
        common.save_json(os.path.join(common.run_dir(a, str(root)), "x.json"), {})
        rows = _rows(f1s, [0.1 * a.seed] * steps, updates=1 if comp else 0)
        with open(os.path.join(common.run_dir(a, str(root)), common.METRICS), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    # one run measured by experiments/diagnostics/extractor_rl_gain.py
    gained = next(a for a in arms if a.label == entry_quality.COMP and a.seed == 0)
    gain = {"step": 20, "pool": {"warm": {"step_f1": 0.5, "games": 12},
                                 "rl": {"step_f1": 0.625, "games": 12}},
            "held_out": {"warm": {"step_f1": 0.8, "games": 30}, "rl": {"step_f1": 0.75, "games": 30}}}
    common.save_json(os.path.join(common.run_dir(gained, str(root)), common.RL_GAIN), gain)
    [rep] = entry_quality.make(str(root), "full", str(out))
    assert (out / "entry_quality.png").stat().st_size > 1000
    table = rep["tables"][0]
    assert len(table["rows"]) == 12 and not rep["notes"]
    by = {(r[0], r[1], r[2]): r for r in table["rows"]}
    assert by[("ALFWorld", entry_quality.COMP, "1")][6] == "0.20"  # the rise
    assert by[("MiniHack Room", entry_quality.COMP, "1")][6] == "0.00"
    assert by[("ALFWorld", entry_quality.STATIC, "2")][3] == "0"  # a fixed extractor
    assert by[(gained_title(gained), entry_quality.COMP, "0")][-2:] == ["0.50 -> 0.62 (12)",
                                                                       "0.80 -> 0.75 (30)"]
    assert by[("ALFWorld", entry_quality.COMP, "1")][-2:] == ["-", "-"]  # not measured
    drawn = json.loads((out / "entry_quality.json").read_text())
    titles = [p["title"] for p in drawn["panels"]]
    assert titles[0].startswith("ALFWorld: pool") and titles[2].startswith("MiniHack Room: pool")
