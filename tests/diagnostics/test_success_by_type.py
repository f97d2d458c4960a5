"""experiments/diagnostics/success_by_type.py's grouping and table on
hand-made episodes, each value worked by hand."""
import math

import pytest

from experiments.diagnostics import success_by_type


def test_by_type_by_hand():
    won = [True, False, True, True, False]
    actions = [4, 10, 6, 8, 10]
    types = ["pick", "pick", "pick", "clean", "two"]
    got = success_by_type.by_type(won, actions, types)
    assert list(got) == ["clean", "pick", "two", "all"]
    assert got["pick"] == {"games": 3, "success": 2 / 3, "actions_when_won": 5.0}
    assert got["clean"] == {"games": 1, "success": 1.0, "actions_when_won": 8.0}
    assert got["two"]["games"] == 1 and got["two"]["success"] == 0.0
    assert math.isnan(got["two"]["actions_when_won"])  # no win: no actions to average
    assert got["all"] == {"games": 5, "success": 0.6, "actions_when_won": 6.0}


def test_a_row_without_one_type():
    got = success_by_type.by_type([True, False, False, True], [4, 10, 10, 6],
                                  ["pick", "two", "two", "clean"], without="two")
    assert list(got) == ["clean", "pick", "two", "all", "all without two"]
    assert got["all without two"] == {"games": 2, "success": 1.0, "actions_when_won": 5.0}
    pooled = success_by_type.pool([got, got])
    assert list(pooled)[-2:] == ["all", "all without two"]
    assert pooled["all without two"]["games"] == 4


def test_table_free_beside_guided():
    free = success_by_type.by_type([False, True], [10, 7], ["pick", "pick"])
    guided = success_by_type.by_type([True, True], [5, 5], ["pick", "pick"])
    lines = success_by_type.table(free, guided).splitlines()
    assert lines[2] == "| pick | 2 | 0.50 | 1.00 | +0.50 | 7.0 | 5.0 |"
    assert lines[3] == "| all | 2 | 0.50 | 1.00 | +0.50 | 7.0 | 5.0 |"
    # a run without experience: its guided cells are empty
    assert success_by_type.table(free, None).splitlines()[2] == "| pick | 2 | 0.50 | - | - | 7.0 | - |"


def test_pool_sums_games_and_wins():
    a = success_by_type.by_type([True, False], [4, 10], ["pick", "pick"])
    b = success_by_type.by_type([True, True, False], [8, 6, 10], ["pick", "two", "two"])
    got = success_by_type.pool([a, b])
    assert list(got) == ["pick", "two", "all"]
    # pick: wins 1 + 1 of 3 games, actions (4 + 8) / 2; two: 1 of 2, 6 actions
    assert got["pick"] == {"games": 3, "success": 2 / 3, "actions_when_won": 6.0}
    assert got["two"] == {"games": 2, "success": 0.5, "actions_when_won": 6.0}
    assert got["all"]["games"] == 5 and got["all"]["success"] == pytest.approx(0.6)
    assert got["all"]["actions_when_won"] == pytest.approx(6.0)
    lost = success_by_type.pool([success_by_type.by_type([False], [10], ["two"])])
    assert math.isnan(lost["two"]["actions_when_won"])


def test_rejects_no_games(capsys):
    assert success_by_type.main(["some_run", "--games=0"]) == 2
    assert "--games must be >= 1" in capsys.readouterr().err
