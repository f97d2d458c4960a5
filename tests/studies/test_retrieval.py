"""Training success over the whole run (ablation.WHOLE_RUN) and the retrieval
figure's table: its ratio column is the last-3-steps measure even though the
whole-run column reads the same metric, from hand-made records whose two
measures disagree."""
import pytest

from experiments.figures import common

from experiments.studies import retrieval
from tests.figures.test_figures import rows_of, write_rows


def test_ratio_is_last_three_steps_and_whole_run_column_is_every_step(tmp_path):
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    for a in retrieval.arms("full"):
        n = common.expected_steps(a)
        # the title arm: 0.0 until the last 3 steps, then 1.0; every other arm 0.5 throughout
        early_zero = a.label == retrieval.BY_TITLE
        write_rows(common.run_dir(a, root),
                   rows_of([(s, (1.0 if s > n - 3 else 0.0) if early_zero else 0.5)
                            for s in range(1, n + 1)]))
    (rep,) = retrieval.make(root, "full", out)
    assert rep["ratios"][retrieval.BY_TITLE]["ratio_of_means"] == pytest.approx(2.0)  # 1.0 / 0.5
    table = rep["tables"][0]
    col = table["columns"].index("train success, all steps")
    title_row = next(r for r in table["rows"] if r[0] == retrieval.BY_TITLE)
    n = common.expected_steps(retrieval.arms("full")[0])
    assert title_row[col].startswith(f"{3 / n:.2f}")  # 3 wins in n steps


def test_whole_run_final_is_the_mean_of_every_rl_step():
    from experiments.figures import aggregate
    from experiments.figures.ablation import WHOLE_RUN
    key, last_k, _ = WHOLE_RUN
    rows = [{"step": 0, "eval_no_exp/success": 0.5}] + [
        {"step": s, key: v} for s, v in zip(range(1, 5), (0.0, 0.25, 0.5, 1.0))]
    assert aggregate.final_value(rows, key, last_k) == 0.4375  # (0 + .25 + .5 + 1) / 4
    assert aggregate.final_value(rows, key, 3) == 0.5833333333333334  # the last-3 measure differs
    assert aggregate.final_value(rows, key, 2, first=True) == 0.125  # (0 + .25) / 2: a run's start
