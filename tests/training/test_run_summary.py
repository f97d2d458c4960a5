"""The table a run prints at its end, against hand-computed means."""
from crl_jax.training.run_summary import evaluation_table, format_summary, training_table


def _history():
    h = [{"step": 0, "eval_no_exp/success": 0.25, "eval_with_exp/success": 0.5,
          "eval_no_exp/actions": 9.0, "eval_with_exp/actions": 8.0}]
    for step in range(1, 5):  # guided 0.5 / free 0.25 early, guided 1.0 / free 0.5 late
        late = step > 2
        h.append({"step": step, "train/success": 0.75 if late else 0.375,
                  "train/success_guided": 1.0 if late else 0.5,
                  "train/success_free": 0.5 if late else 0.25,
                  "train/actions_when_won_guided": 6.0, "train/actions_when_won_free": 9.0})
    h.append({"step": 4, "eval_no_exp/success": 0.375})  # an evaluation without its twin
    return h


def test_training_rows_average_the_first_and_last_steps():
    rows = training_table(_history(), window=2)
    assert rows[2] == "| 1-2 | 0.38 | 0.50 | 0.25 | +0.25 | 6.0 / 9.0 |"
    assert rows[3] == "| 3-4 | 0.75 | 1.00 | 0.50 | +0.50 | 6.0 / 9.0 |"
    assert len(training_table(_history(), window=5)) == 3  # one window when it covers every step


def test_evaluations_show_with_and_without_experience_and_mark_what_is_missing():
    rows = evaluation_table(_history())
    assert rows[2:] == ["| 0 | 0.25 | 0.50 | 9.0 / 8.0 |", "| 4 | 0.38 | - | - / - |"]


def test_a_baseline_without_guided_episodes_and_an_empty_history():
    h = [{"step": 1, "train/success": 0.5, "train/success_free": 0.5}]
    assert training_table(h)[2] == "| 1-1 | 0.50 | - | 0.50 | - | - / - |"
    assert format_summary([]) == ""
