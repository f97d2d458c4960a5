"""The extractor_missteps figure's per-run row, from hand-made metrics rows."""
import math
import os

import pytest

from experiments.figures import common


def test_missteps_row_reads_rejections_by_kind_and_answers_at_cap():
    from experiments.studies.extractor_missteps import missteps_row
    rows = [{"step": 1, "train/success": 0.2, "train/success_guided": 0.1,
             "train/success_free": 0.3, "manager/extractor_calls": 10, "manager/calls_malformed": 1,
             "extractor/pool_step_f1": 0.5},
            {"step": 2, "train/success": 0.4, "train/success_guided": 0.5,
             "train/success_free": 0.3, "manager/extractor_calls": 40, "manager/calls_malformed": 3,
             "manager/rejected_no_json": 2, "manager/rejected_bad_entry": 1,
             "extractor/answers_at_cap": 2, "extractor/pool_step_f1": 0.7}]
    r = missteps_row(rows)
    assert r["malformed"] == 3 / 40 and r["kinds"] == "bad_entry 1, no_json 2"
    assert r["at cap"] == 2 and (r["f1 first"], r["f1 last"]) == (0.5, 0.7)
    assert r["train last 5"] == pytest.approx(0.3) and r["guided"] == pytest.approx(0.3)
    # a run from before the counters: n/a, not zero
    old = missteps_row([{k: v for k, v in rows[1].items()
                         if not k.startswith(("manager/rejected_", "extractor/answers"))}])
    assert old["kinds"] == "n/a" and math.isnan(old["at cap"])


def test_extractor_missteps_leave_the_runs_without_an_extractor_current(tmp_path):
    """alfworld_cpu's extractor warm start shows missteps (0.5) since runs
    were made without them: the baseline and oracle arms never load the
    extractor and start from the same actor, so their records stay current;
    a Comp. RL record is stale on the key and on the setting."""
    from crl_jax.training.config_io import apply_overrides, save_config_json
    from crl_jax.training.warm_cache import record_warm_start, warm_start_key
    for mode in ("none", "oracle", "comp_rl"):
        arm = common.Arm("x", "alfworld_cpu", (f"experience.mode={mode}",), 0)
        assert common.arm_config(arm).warm_start.extractor_missteps == 0.5
        out = common.run_dir(arm, str(tmp_path))
        os.makedirs(out)
        old = apply_overrides(common.arm_config(arm), ["warm_start.extractor_missteps=0"])
        save_config_json(old, os.path.join(out, "config.json"))
        record_warm_start(out, warm_start_key(old))
        want = [] if mode != "comp_rl" else [
            f"warm start: {warm_start_key(old)} -> {warm_start_key(common.arm_config(arm))}",
            "warm_start.extractor_missteps: 0.0 -> 0.5"]
        assert common.stale_settings(arm, out) == want
        # a run made with today's settings is current in every mode
        save_config_json(common.arm_config(arm), os.path.join(out, "config.json"))
        record_warm_start(out, warm_start_key(common.arm_config(arm)))
        assert common.stale_settings(arm, out) == []
