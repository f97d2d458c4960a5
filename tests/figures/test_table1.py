"""Table 1's tables from hand-made records: the warm start's row is the
Baseline's step-0 evaluation, the average's per-seed column lists each seed's
final, and the training table's windows and its ratio to the Baseline are the
hand-computed means."""
import pytest

from experiments.figures import common, table1_multitask
from tests.figures.test_figures import write_rows

ENVS = [env for env, _ in table1_multitask.ENVS]


def records(label: str, seed: int, n: int) -> list[dict]:
    """Training success: the Baseline 0.5 every step; every other method 0.0
    for the first 5 steps and 1.0 after. Held-out: 0.2 + 0.1 * seed at step 0
    (the shared warm start), 0.1 * (seed + 1) at the end."""
    rows = [{"step": 0, "time": 0.0, "eval_no_exp/success": 0.2 + 0.1 * seed,
             "eval_with_exp/success": 0.2 + 0.1 * seed,
             **{f"eval_{w}/{env}/success": 0.2 + 0.1 * seed for env in ENVS
                for w in ("no_exp", "with_exp")}}]
    for s in range(1, n + 1):
        rows.append({"step": s, "time": 0.0,
                     "train/success": 0.5 if label == "Baseline" else (0.0 if s <= 5 else 1.0)})
    end = 0.1 * (seed + 1)
    rows[-1].update({"eval_no_exp/success": end, "eval_with_exp/success": end,
                     **{f"eval_{w}/{env}/success": end for env in ENVS
                        for w in ("no_exp", "with_exp")}})
    return rows


def test_table1_rows_from_hand_made_records(tmp_path):
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    arms = table1_multitask.arms("full")
    for a in arms:
        write_rows(common.run_dir(a, root), records(a.label, a.seed, common.expected_steps(a)))
    n = common.expected_steps(arms[0])
    seeds = sorted({a.seed for a in arms})
    assert seeds == [0, 1, 2]
    (rep,) = table1_multitask.make(root, "full", out)
    held, train = rep["tables"]

    start = held["rows"][0]
    assert start[0].startswith("Warm start")
    assert start[-2] == "0.30"  # mean of 0.2, 0.3, 0.4
    assert start[-1] == "0.20, 0.30, 0.40"
    baseline = next(r for r in held["rows"] if r[0] == "Baseline")
    assert baseline[-2] == "0.20 (0.75)"  # mean of 0.1, 0.2, 0.3 (paper 0.75)
    assert baseline[-1] == "0.10, 0.20, 0.30"

    comp = rep["numbers"]["training"]["Comp. RL"]
    assert comp["first 5 steps"]["mean"] == 0.0
    assert comp["last 3 steps"]["mean"] == 1.0
    assert comp["all steps"]["mean"] == pytest.approx((n - 5) / n)
    ratio = comp["all steps / Baseline"]
    assert ratio["ratio_of_means"] == pytest.approx((n - 5) / n / 0.5)
    assert set(ratio["per_seed"]) == {"0", "1", "2"}
    row = next(r for r in train["rows"] if r[0] == "Comp. RL")
    assert row[1] == "0, 1, 2"
    assert row[2] == "0.00 [0.00, 0.00] (0.00, 0.00, 0.00)"
