"""Which settings make a figure's recorded run stale (rerun) and which a run
never reads (experiments/figures/common.py stale_settings, unread)."""
from __future__ import annotations

import os

from experiments.figures import common


def test_experience_settings_do_not_make_a_baseline_run_stale(tmp_path):
    """A run without experience never reads experience.*: retuning the
    pipeline leaves it valid, while an experience arm is rerun."""
    from crl_jax.training.config_io import apply_overrides, save_config_json
    for mode, stale in (("none", []), ("comp_rl", ["experience.merge_every: 3 -> 5"])):
        arm = common.Arm("x", "alfworld_cpu", (f"experience.mode={mode}",), 0)
        out = common.run_dir(arm, str(tmp_path))
        os.makedirs(out)
        old = apply_overrides(common.arm_config(arm), ["experience.merge_every=3"])
        save_config_json(old, os.path.join(out, "config.json"))
        assert common.stale_settings(arm, out) == stale
    # the mode itself still counts, and so do other settings
    arm = common.Arm("x", "alfworld_cpu", ("experience.mode=none",), 1)
    out = common.run_dir(arm, str(tmp_path))
    os.makedirs(out)
    old = apply_overrides(common.arm_config(arm), ["experience.mode=comp_rl", "train.steps=3"])
    save_config_json(old, os.path.join(out, "config.json"))
    assert common.stale_settings(arm, out) == ["experience.mode: 'comp_rl' -> 'none'",
                                               "train.steps: 3 -> 20"]


def test_household_settings_do_not_make_a_run_without_households_stale(tmp_path):
    """env.home_rate (its default moved) is read only with env.households > 0."""
    from crl_jax.training.config_io import apply_overrides, save_config_json
    for preset, stale in (("alfworld_cpu", []),
                          ("alfworld_households_cpu", ["env.home_rate: 0.65 -> 0.5"])):
        arm = common.Arm("x", preset, ("experience.mode=comp_rl",), 0)
        out = common.run_dir(arm, str(tmp_path))
        os.makedirs(out)
        old = apply_overrides(common.arm_config(arm), ["env.home_rate=0.65"])
        save_config_json(old, os.path.join(out, "config.json"))
        assert common.stale_settings(arm, out) == stale


def test_extractor_settings_do_not_make_an_oracle_run_stale(tmp_path):
    """An oracle arm has no extractor: its answer cap is not read, while the
    guided share is; a Comp. RL arm is rerun for either."""
    from crl_jax.training.config_io import apply_overrides, save_config_json
    cases = (("oracle", ["experience.guided_fraction: 0.25 -> 0.5"]),
             ("comp_rl", ["experience.extractor_max_new_tokens: 40 -> 96",
                          "experience.guided_fraction: 0.25 -> 0.5"]))
    for mode, stale in cases:
        arm = common.Arm("x", "alfworld_cpu", (f"experience.mode={mode}",), 0)
        out = common.run_dir(arm, str(tmp_path))
        os.makedirs(out)
        old = apply_overrides(common.arm_config(arm), ["experience.extractor_max_new_tokens=40",
                                                       "experience.guided_fraction=0.25"])
        save_config_json(old, os.path.join(out, "config.json"))
        assert common.stale_settings(arm, out) == stale


def test_extractor_only_warm_start_settings_leave_arms_without_an_extractor_current(tmp_path):
    """A households run recorded from the warm start made before the
    extractor's lesson settings changed: GRPO and the oracle read no
    extractor, so they stay; Comp. RL is rerun from the new warm start."""
    from crl_jax.training.config_io import apply_overrides, save_config_json
    from crl_jax.training.warm_cache import record_warm_start, warm_start_key
    before = ["warm_start.extractor_writes_room=true", "warm_start.extractor_wrong_picks=0"]
    for mode, stale in (("none", False), ("oracle", False), ("comp_rl", True)):
        extra = ("controls.oracle_source=lesson",) if mode == "oracle" else ()
        arm = common.Arm("x", "alfworld_households_cpu", (f"experience.mode={mode}", *extra), 0)
        out = common.run_dir(arm, str(tmp_path))
        os.makedirs(out)
        old = apply_overrides(common.arm_config(arm), before)
        save_config_json(old, os.path.join(out, "config.json"))
        record_warm_start(out, warm_start_key(old))
        diff = common.stale_settings(arm, out)
        assert bool(diff) is stale, (mode, diff)
        if stale:
            assert diff[0].startswith("warm start: ") and "warm_start.extractor_wrong_picks: 0.0 -> 0.25" in diff


def test_run_from_another_warm_start_is_stale(tmp_path):
    """The run records its warm-start key; a key built by other code today
    (the cache version) makes it stale; runs without the record are trusted."""
    from crl_jax.training.config_io import save_config_json
    from crl_jax.training.warm_cache import record_warm_start, warm_start_key
    arm = common.Arm("x", "minihack_room_cpu", ("experience.mode=none",), 0)
    out = common.run_dir(arm, str(tmp_path))
    os.makedirs(out)
    save_config_json(common.arm_config(arm), os.path.join(out, "config.json"))
    assert common.stale_settings(arm, out) == []
    today = warm_start_key(common.arm_config(arm))
    record_warm_start(out, today)
    assert common.stale_settings(arm, out) == []
    record_warm_start(out, "minihack_room_cpu-0000")
    assert common.stale_settings(arm, out) == [f"warm start: minihack_room_cpu-0000 -> {today}"]


# --------------------------------------------------------------------------- end to end
