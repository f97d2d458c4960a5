"""The reward_baseline figures: both CPU presets at the full budget, nothing at
quick, and the ratio of the free-episode arm to the paper's r(m) per preset
from hand-made records."""
import os

import pytest

from experiments.figures import common

from experiments.studies import reward_baseline
from tests.figures.test_figures import rows_of, write_rows


def _write(arm, root, success):
    steps = range(1, common.expected_steps(arm) + 1)
    write_rows(common.run_dir(arm, root), rows_of([(s, success) for s in steps]))


def test_quick_budget_has_no_runs_and_no_figures(tmp_path):
    assert reward_baseline.arms("quick") == []
    assert reward_baseline.make(str(tmp_path), "quick", str(tmp_path)) == []


def test_full_budget_draws_each_preset_with_its_own_ratio(tmp_path):
    arms = reward_baseline.arms("full")
    by_preset = {}
    for a in arms:
        by_preset.setdefault(a.preset, set()).add((a.label, a.seed))
    assert set(by_preset) == {"alfworld_cpu", "minihack_room_cpu"}
    assert all(len(v) == 6 for v in by_preset.values())  # 2 arms x 3 seeds
    # paper r(m) 0.5 everywhere; the free baseline 0.25 on ALFWorld, 0.75 on MiniHack
    free = {"alfworld_cpu": 0.25, "minihack_room_cpu": 0.75}
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    for a in arms:
        _write(a, root, free[a.preset] if a.label == reward_baseline.FREE else 0.5)
    reports = reward_baseline.make(root, "full", out)
    assert [r["name"] for r in reports] == ["reward_baseline", "reward_baseline_minihack"]
    ratios = {r["name"]: r["ratios"][reward_baseline.FREE] for r in reports}
    assert ratios["reward_baseline"]["ratio_of_means"] == pytest.approx(0.5)
    assert ratios["reward_baseline_minihack"]["ratio_of_means"] == pytest.approx(1.5)
    assert ratios["reward_baseline_minihack"]["paired_seeds"] == 3
    for r in reports:
        assert os.path.getsize(r["png"]) > 1000
