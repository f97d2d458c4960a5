"""The oracle ladder's table cells, from hand-made rows."""


def test_oracle_ladder_held_out_cell_is_the_seed_mean_of_first_and_last_evaluations():
    from experiments.studies import oracle_ladder
    runs = {0: [{"step": 0, "eval_no_exp/success": 0.2, "eval_with_exp/success": 0.3},
                {"step": 5, "train/success": 0.5},
                {"step": 10, "eval_no_exp/success": 0.4, "eval_with_exp/success": 0.5}],
            1: [{"step": 0, "eval_no_exp/success": 0.4, "eval_with_exp/success": 0.1},
                {"step": 10, "eval_no_exp/success": 0.2, "eval_with_exp/success": 0.7}]}
    assert oracle_ladder._heldout(runs) == "0.30 / 0.20 -> 0.30 / 0.60"
    baseline = {0: [{"step": 0, "eval_no_exp/success": 0.25}, {"step": 9, "eval_no_exp/success": 0.5}]}
    assert oracle_ladder._heldout(baseline) == "0.25 -> 0.50"


def test_oracle_ladder_whole_run_cell_averages_every_rl_step_and_divides_by_grpo():
    from experiments.studies import oracle_ladder
    # step 0 (the warm start's evaluation) carries no training success and is skipped
    arm = {0: [{"step": 0, "eval_no_exp/success": 0.9}, {"step": 1, "train/success": 0.2},
               {"step": 2, "train/success": 0.4}],
           1: [{"step": 1, "train/success": 0.6}, {"step": 2, "train/success": 0.6}]}
    grpo = {0: [{"step": 1, "train/success": 0.25}, {"step": 2, "train/success": 0.35}],
            1: [{"step": 1, "train/success": 0.5}, {"step": 2, "train/success": 0.5}]}
    # arm: seeds 0.30 and 0.60, mean 0.45; GRPO: 0.30 and 0.50, mean 0.40; 0.45 / 0.40 = 1.125
    assert oracle_ladder._whole_run_cell(arm, grpo) == "0.45 (0.30, 0.60, 1.12x GRPO)"
    assert oracle_ladder._whole_run_cell(grpo, grpo) == "0.40 (0.30, 0.50, 1.00x GRPO)"
    assert oracle_ladder._whole_run_cell({}, grpo) == "-"
    assert oracle_ladder._whole_run_cell(arm, {}) == "0.45 (0.30, 0.60)"


def test_oracle_ladder_actions_cell_gives_the_first_and_the_last_window():
    from experiments.studies import oracle_ladder
    # 10 steps: the first 5 (WINDOW) and the last 5 are disjoint; one seed
    rows = [{"step": s, "train/actions_when_won_free": 9.0 if s <= 5 else 8.0,
             "train/actions_when_won_guided": 6.0 if s <= 5 else 5.0} for s in range(1, 11)]
    assert oracle_ladder._actions({0: rows}, True) == "9.0 / 6.0 = 1.50x"
    assert oracle_ladder._actions({0: rows}, False) == "8.0 / 5.0 = 1.60x"
    assert oracle_ladder._cells({0: rows})[-1] == "9.0 / 6.0 = 1.50x -> 8.0 / 5.0 = 1.60x"
    assert oracle_ladder._actions({0: [{"step": 1, "train/success": 0.5}]}, True) == "n/a"
