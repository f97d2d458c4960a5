"""The distrust figure: its preset arms are the ladder's and Fig. 6's records
(the same run names), its swap arms differ from them only by the warm
start's guided source, and each of its two tables sets its arms against the
GRPO arm of its own warm start."""
from experiments.figures import common
from experiments.studies import distrust, oracle_ladder
from experiments.figures.ablation import variant_arms
from tests.figures.test_figures import write_rows


def test_the_preset_arms_are_the_committed_records_and_the_swap_arms_add_one_override():
    ladder = {a.run_name for a in oracle_ladder.arms("full")}
    drawn = distrust.arms("full")
    preset = variant_arms(distrust.PRESET, "full", distrust.PRESET_ARMS)
    assert {a.run_name for a in preset} <= ladder and len(preset) == 12
    swap = [a for a in drawn if a.run_name not in ladder]
    assert len(swap) == 12
    for a in swap:
        assert distrust.SWAP[0] in a.overrides
    assert distrust.arms("quick") == [] and distrust.make("", "quick", "") == []


def _rows(success: float, n: int) -> list[dict]:
    rows = [{"step": 0, "eval_no_exp/success": 0.2, "eval_with_exp/success": 0.1}]
    rows += [{"step": s, "train/success": success, "train/success_guided": success,
              "train/success_free": success / 2} for s in range(1, n + 1)]
    return rows


def test_each_table_divides_by_the_grpo_of_its_own_warm_start(tmp_path):
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    for a in distrust.arms("full"):
        swap = "swap" in a.label
        grpo = a.label.startswith("No experience")
        # GRPO 0.4 on the preset's warm start, 0.2 on the swap one; every other arm 0.4
        write_rows(common.run_dir(a, root),
                   _rows(0.2 if swap and grpo else 0.4, common.expected_steps(a)))
    (rep,) = distrust.make(root, "full", out)
    preset_table, swap_table = rep["tables"]
    own_preset = next(r for r in preset_table["rows"] if r[0] == "Oracle, own plan")
    own_swap = next(r for r in swap_table["rows"] if r[0].startswith("Oracle, own plan"))
    assert own_preset[-2].endswith("1.00x GRPO)")
    assert own_swap[-2].endswith("2.00x GRPO)")
    # guided 0.40 against free 0.20 in both windows
    assert own_swap[2].startswith("0.40 / 0.20 (+0.20")
