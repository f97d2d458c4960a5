"""Paired seed differences against GRPO, from hand-made rows and hand-computed
numbers."""
import math

from experiments.studies import seed_pairs


def _run(*successes, guided=None, free=None):
    # step 0 is the warm start's evaluation: no training success, skipped
    rows = [{"step": 0, "eval_no_exp/success": 0.9}] + [
        {"step": i + 1, "train/success": s} for i, s in enumerate(successes)]
    for key, value in (("train/success_guided", guided), ("train/success_free", free)):
        if value is not None:
            for r in rows[1:]:
                r[key] = value
    return rows


def test_differences_pair_seeds_both_ran():
    arm = {0: _run(0.2, 0.4), 1: _run(0.5, 0.5), 2: _run(0.1, 0.1)}
    grpo = {0: _run(0.1, 0.1), 1: _run(0.6, 0.6)}
    diffs = seed_pairs.differences(arm, grpo)
    assert list(diffs) == [0, 1]  # seed 2 has no GRPO to pair with
    assert math.isclose(diffs[0], 0.3 - 0.1) and math.isclose(diffs[1], 0.5 - 0.6)


def test_seeds_needed_is_two_standard_errors():
    # (2 * 0.06 / 0.03)^2 = 16 exactly; (2 * 0.05 / 0.03)^2 = 11.1 -> 12
    assert seed_pairs.seeds_needed(0.06, 0.03) == 16
    assert seed_pairs.seeds_needed(0.05, -0.03) == 12
    assert math.isnan(seed_pairs.seeds_needed(0.05, 0.0))
    assert math.isnan(seed_pairs.seeds_needed(float("nan"), 0.03))


def test_table_rows_and_pools():
    grpo = {0: _run(0.10), 1: _run(0.20), 2: _run(0.30)}
    oracle_a = {0: _run(0.15, guided=0.2, free=0.1), 1: _run(0.15, guided=0.2, free=0.1),
                2: _run(0.40, guided=0.5, free=0.3)}   # +0.05, -0.05, +0.10
    oracle_b = {0: _run(0.10)}                                  # +0.00
    other = {1: _run(0.20)}                                     # +0.00
    t = seed_pairs.table([("Oracle (a)", oracle_a, grpo), ("Oracle (b)", oracle_b, grpo),
                          ("Other", other, grpo)], {"every oracle": "Oracle"})
    rows = {r[0]: r for r in t["rows"]}
    assert len(t["columns"]) == len(rows["Oracle (a)"])
    # the sample standard deviation, by hand
    d = [0.05, -0.05, 0.10]
    m = sum(d) / 3
    s = math.sqrt(sum((v - m) ** 2 for v in d) / 2)
    assert rows["Oracle (a)"][1:4] == ["3", "+0.05, -0.05, +0.10", f"+0.03 ({s:.2f})"]
    assert rows["Oracle (a)"][4] == str(math.ceil((2 * s / m) ** 2))
    # 1.2x of GRPO's mean 0.20 is a margin of 0.04
    assert rows["Oracle (a)"][5] == str(math.ceil((2 * s / 0.04) ** 2))
    # guided 0.2, 0.2, 0.5 and free 0.1, 0.1, 0.3 against GRPO's 0.1, 0.2, 0.3
    assert rows["Oracle (a)"][6:8] == ["+0.10 (+0.10, +0.00, +0.20)",
                                       "-0.03 (+0.00, -0.10, +0.00)"]
    # one step a seed: the step differences are the seeds' (sd as above)
    assert rows["Oracle (a)"][8] == f"{s:.2f}"
    # one pair: no spread, so no seed counts; no guided or free episodes recorded
    assert rows["Oracle (b)"][1:] == ["1", "+0.00", "+0.00 (-)", "-", "-", "-", "-", "-"]
    # the pool takes both oracle rows' four pairs, not the other arm's
    pool = rows["every oracle"]
    assert pool[1] == "4" and pool[2] == "+0.05, -0.05, +0.10, +0.00"
    assert pool[6] == rows["Oracle (a)"][6]  # oracle (b) recorded no guided episodes
    assert seed_pairs.table([("Empty", {}, grpo)], {})["rows"][0][1:] == ["0"] + ["-"] * 7


def test_step_differences_pair_steps_both_recorded():
    arm = {0: _run(0.5, 0.25, 0.5), 1: _run(0.0, 0.75)}
    grpo = {0: _run(0.25, 0.25), 1: _run(0.5, 0.5), 2: _run(0.1)}
    # seed 0: steps 1-2 (its step 3 has no GRPO step); seed 1: both; seed 2 no arm
    assert seed_pairs.step_differences(arm, grpo) == [0.25, 0.0, -0.5, 0.25]
