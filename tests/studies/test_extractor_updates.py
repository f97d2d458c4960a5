"""The extractor-updates figure's per-seed table, from hand-made records: the
updates are summed over the run, malformed is the last row's share of the
extractor's calls, and "train all steps" is the mean of every RL step."""
import pytest

from experiments.figures import common

from experiments.studies import extractor_updates
from tests.figures.test_figures import write_rows


def records(updates_per_step: int, n: int) -> list[dict]:
    rows = []
    for s in range(1, n + 1):
        rows.append({"step": s, "time": float(s), "train/success": 1.0 if s % 2 else 0.0,
                     "extractor/updates": updates_per_step, "extractor/weight_mean": 0.5,
                     "time/extractor_update": 1.0,
                     "manager/extractor_calls": 10 * s, "manager/calls_malformed": s})
    rows[0]["extractor/pool_step_f1"] = 0.5
    rows[-1]["extractor/pool_step_f1"] = 0.75
    return rows


def test_seeds_table_from_hand_made_records(tmp_path):
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    drawn = extractor_updates.arms("full")
    for a in drawn:
        per_step = 16 if a.label == extractor_updates.CHOSEN else 1
        write_rows(common.run_dir(a, root), records(per_step, common.expected_steps(a)))
    n = common.expected_steps(drawn[0])
    (rep,) = extractor_updates.make(root, "full", out)
    table = rep["tables"][1]
    rows = {(r[0], r[1]): r for r in table["rows"]}
    assert len(rows) == 6  # two arms x seeds 0-2
    chosen = rows[(extractor_updates.CHOSEN, "1")]
    assert chosen[2] == str(16 * n)
    assert chosen[3] == "0.10"  # n malformed of 10 n calls
    assert chosen[4:6] == ["0.50", "0.75"]
    odd_steps = (n + 1) // 2
    assert chosen[-1] == f"{odd_steps / n:.2f}"
    assert rows[(extractor_updates.ARMS[0][0], "0")][2] == str(n)
    assert extractor_updates.sweep_row(records(2, n))["updates"] == pytest.approx(2 * n)
