"""experiments/diagnostics/household_bars.py on hand-written records: each
bar's value computed by hand, met and not met."""
import json

import pytest

from experiments.diagnostics import household_bars


def _rows(success, guided, free, won, won_guided, held=(0.1, 0.2), steps=6):
    rows = [{"step": 0, "train/success": 9.0}]  # step 0 (before RL) is left out
    rows += [{"step": s, "train/success": success, "train/success_guided": guided,
              "train/success_free": free, "train/actions_when_won": won,
              "train/actions_when_won_guided": won_guided} for s in range(1, steps + 1)]
    rows.append({"step": steps, "eval_no_exp/success": held[0], "eval_with_exp/success": held[1]})
    return rows


def test_bars_by_hand():
    recipe = [_rows(0.3, 0.4, 0.28, 6.0, 5.0), _rows(0.2, 0.25, 0.2, 6.0, 5.0, held=(0.1, 0.12))]
    grpo = [[{"step": s, "train/success": v, "train/actions_when_won": 8.0} for s in range(1, 7)]
            for v in (0.2, 0.1)]
    lines = household_bars.bar_lines(recipe, grpo, recipe[1:], grpo[:1])
    # 0.25 / 0.15 = 1.667x, above GRPO on both seeds
    assert lines[0].endswith("= 1.667x, above it on 2 of 2 seeds; bar 1.2x and every seed: met")
    # (0.12 + 0.05) / 2 = 0.085
    assert lines[1] == "guided minus free, last 5 steps: +0.085 (0.120, 0.050); bar +0.10: NOT met"
    # (0.1 + 0.02) / 2 = 0.06
    assert lines[2] == ("held out, with minus without the bank, last evaluation: +0.060 "
                        "(0.100, 0.020); bar +0.05: met")
    assert lines[3].startswith("actions of won episodes, last 5 steps: GRPO 8.00 / recipe 6.00 "
                               "= 1.333x fewer (guided ones 5.00, 1.600x)")
    assert lines[3].endswith("bar 1.3x: met")
    # no homes: 0.2 against 0.2
    assert lines[4].endswith("+0.000; bar within 0.05: met")
    grpo_high = [[dict(r, **{"train/success": 0.25}) for r in grpo[1]], grpo[0]]
    assert "above it on 1 of 2 seeds; bar 1.2x and every seed: NOT met" in household_bars.bar_lines(
        recipe, grpo_high)[0]
    with pytest.raises(ValueError, match="pair them by seed"):
        household_bars.bar_lines(recipe, grpo[:1])


def test_the_command_reads_runs_by_name(tmp_path, capsys):
    for name, rows in (("r0", _rows(0.3, 0.4, 0.2, 6.0, 5.0)),
                       ("g0", [{"step": 1, "train/success": 0.2, "train/actions_when_won": 9.0}])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert household_bars.main([f"--root={tmp_path}", "--recipe", "r0", "--grpo", "g0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[1].startswith("guided minus free, last 5 steps: +0.200")
    assert household_bars.main([f"--root={tmp_path}", "--recipe", "r0", "--grpo", "missing"]) == 2
    assert "missing: no metrics.jsonl" in capsys.readouterr().err
