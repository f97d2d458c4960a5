"""run_stats: one run's diagnostics against values computed by hand, and the
table over real run directories (config.json + metrics.jsonl)."""
from __future__ import annotations

import json
import math
import os

import pytest

from experiments.figures import common, run_stats


def test_run_summary_matches_hand_computed_values():
    rows = [{"step": 0, "eval_no_exp/success": 0.25, "eval_with_exp/success": 0.5}]
    for step in range(1, 8):  # train success 0.1 .. 0.7
        rows.append({"step": step, "train/success": step / 10,
                     "manager/extractor_calls": 4 * step, "manager/calls_malformed": step,
                     "bank/size": 10 + step})
    rows[2]["train/success_guided"], rows[5]["train/success_guided"] = 0.2, 0.6  # steps 2, 5
    rows[3]["train/success_free"] = 0.9
    rows[6]["extractor/updates"], rows[7]["extractor/updates"] = 1, 1  # once the buffer filled
    rows[7]["manager/asks"] = 3  # cumulative, like the other counters
    rows[1].update({"train/asks_per_episode": 0.25, "train/episodes": 8})  # 2 ask turns
    rows[4].update({"train/asks_per_episode": 0.5, "train/episodes": 4})  # 2 more
    rows[7].update({"eval_no_exp/success": 0.75, "eval_with_exp/success": 0.125})
    s = run_stats.run_summary(list(reversed(rows)))  # order of rows does not matter
    assert s["steps"] == 7
    assert s["train first 5"] == pytest.approx((0.1 + 0.2 + 0.3 + 0.4 + 0.5) / 5)
    assert s["train last 5"] == pytest.approx((0.3 + 0.4 + 0.5 + 0.6 + 0.7) / 5)
    assert s["train last 3"] == pytest.approx((0.5 + 0.6 + 0.7) / 3)
    assert s["guided"] == pytest.approx(0.4) and s["free"] == pytest.approx(0.9)
    assert (s["eval0 no exp"], s["evalN no exp"], s["evalN with exp"]) == (0.25, 0.75, 0.125)
    assert s["malformed"] == pytest.approx(7 / 28) and s["bank"] == 17
    empty = run_stats.run_summary([{"step": 0}])  # a baseline row set: nothing to average
    assert s["ext updates"] == 2 and s["asks"] == 3 and s["ask turns"] == 4
    assert math.isnan(empty["guided"]) and math.isnan(empty["malformed"])
    assert math.isnan(empty["train last 3"])
    assert math.isnan(empty["ext updates"]) and math.isnan(empty["asks"])
    assert empty["ask turns"] == 0


def test_table_over_run_directories_names_the_ablation_settings(tmp_path):
    from crl_jax.training.config_io import save_config_json
    root = str(tmp_path)
    arm = common.Arm("x", "minihack_room_cpu",
                     ("experience.guided_fraction=1.0", "experience.mode=comp_rl",
                      "train.checkpoint_every=2"), 2)
    out = common.run_dir(arm, root)
    os.makedirs(out)
    save_config_json(common.arm_config(arm), os.path.join(out, "config.json"))
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"step": 1, "train/success": 0.5}) + "\n")
    os.makedirs(out + ".stale-20260101-000000")  # set aside: not listed
    assert run_stats.run_dirs(root, "minihack_room_cpu") == [out]
    rec = run_stats.describe(out, "minihack_room_cpu")
    assert rec["seed"] == 2 and rec["mode"] == "comp_rl"
    assert rec["settings"] == "experience.guided_fraction=1.0"  # not the checkpoint cadence
    table = run_stats.format_table([rec])
    assert table.splitlines()[2].startswith(f"| {os.path.basename(out)} | 2 | comp_rl |")
    with pytest.raises(SystemExit, match="no runs of webshop_cpu"):
        run_stats.main(["--root", root, "--preset", "webshop_cpu"])


def test_repeat_check_compares_every_step_but_the_wall_clock(tmp_path):
    a = [{"step": 0, "time": 1.0, "eval_no_exp/success": 0.25},
         {"step": 1, "time/rollout": 3.0, "train/success": 0.5, "bank/size": 4,
          "rollout/tokens_per_s": 900.0}]
    b = [{"step": 0, "time": 7.0, "eval_no_exp/success": 0.25},
         {"step": 1, "time/rollout": 5.0, "train/success": 0.5, "bank/size": 5,
          "rollout/tokens_per_s": 100.0, "manager/rejected_no_json": 2}]
    check = run_stats.repeat_check(a, b)
    assert check == {"steps": (2, 2), "compared": 3, "equal": 2, "differing": ["bank/size"],
                     "first_differing": {"bank/size": 1}, "first_step": 1,
                     "only_a": [], "only_b": ["manager/rejected_no_json"]}
    # restricted to named metrics: the bank's size is not looked at
    only = run_stats.repeat_check(a, b, metrics=["train/success", "eval_no_exp/success"])
    assert (only["compared"], only["differing"], only["first_step"]) == (2, [], None)
    with pytest.raises(SystemExit, match="not held by both runs: train/actions; both hold: bank"):
        run_stats.repeat_check(a, b, metrics=["train/actions"])
    # a metric only one run holds is listed, not compared
    assert run_stats.repeat_check(a, b[:1])["only_a"] == ["bank/size", "train/success"]
    # a step only one run has differs in every shared metric it holds
    assert run_stats.repeat_check(a + [{"step": 2, "eval_no_exp/success": 0.5}], a)[
        "differing"] == ["eval_no_exp/success"]
    # the command reads metrics.jsonl files, run directories or run names
    for name, rows in (("one", a), ("two", b)):
        os.makedirs(tmp_path / name)
        (tmp_path / name / common.METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_stats.main(["--root", str(tmp_path), "--same", "one", str(tmp_path / "two" / common.METRICS)])


def test_first_differing_step_of_two_runs_that_part(tmp_path, capsys):
    """Two runs equal for three steps, then apart: each metric's first
    differing step, the earliest of them, and each run's first extractor
    update, as the command prints them."""
    same = [{"step": s, "train/success": s / 8, "train/actions": 9.0} for s in range(3)]
    a = same + [{"step": 3, "train/success": 0.5, "train/actions": 8.0, "extractor/updates": 1},
                {"step": 4, "train/success": 0.25, "train/actions": 7.0}]
    b = same + [{"step": 3, "train/success": 0.5, "train/actions": 8.5},
                {"step": 4, "train/success": 0.5, "train/actions": 7.0, "extractor/updates": 1}]
    check = run_stats.repeat_check(a, b)
    # extractor/updates is held by both (at different steps), so it differs from step 3
    assert check["first_differing"] == {"extractor/updates": 3, "train/actions": 3,
                                        "train/success": 4}
    assert check["first_step"] == 3 and check["only_a"] == check["only_b"] == []
    assert check["differing"] == ["extractor/updates", "train/actions", "train/success"]
    assert run_stats.first_step_with(a, "extractor/updates") == 3
    assert run_stats.first_step_with(b, "extractor/updates") == 4
    assert run_stats.first_step_with(same, "extractor/updates") is None
    for name, rows in (("a", a), ("b", b)):
        os.makedirs(tmp_path / name)
        (tmp_path / name / common.METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_stats.main(["--root", str(tmp_path), "--same", "a", "b", "--metrics", "train/success"])
    out = capsys.readouterr().out
    assert "first differing step: 4 (train/success at step 4); first extractor update: " \
           "step 3 / step 4" in out
    run_stats.main(["--root", str(tmp_path), "--same", "a", "a"])
    assert "first differing step: none; first extractor update: step 3 / step 3" in \
        capsys.readouterr().out
