"""Configuration through tyro: overrides, JSON round trip, presets, errors."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest

from crl_jax.training import config_io
from crl_jax.training.config import RunConfig
from experiments.configs import PRESETS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cpu():
    return PRESETS.load("alfworld_cpu")


@pytest.fixture(scope="module")
def alfworld():
    return PRESETS.load("alfworld_cpu")


def test_overrides_parse_each_type(alfworld):
    cfg = config_io.apply_overrides(alfworld, [
        "train.steps=3", "actor_optim.lr=3e-4", "experience.search_and_ask=yes",
        "env.names=alfworld,sokoban", "env.task_types=[]", "experience.mode=none",
        "actor_loss.dual_clip=3.0", "extractor_loss.max_abs_log_ratio=None",
        "--train.seed=4"])
    assert cfg.train.steps == 3 and cfg.actor_optim.lr == pytest.approx(3e-4)
    assert cfg.experience.search_and_ask is True
    assert cfg.env.names == ("alfworld", "sokoban") and cfg.env.task_types == ()
    assert cfg.experience.mode == "none" and cfg.actor_loss.dual_clip == 3.0
    assert cfg.extractor_loss.max_abs_log_ratio is None and cfg.train.seed == 4
    # Untouched keys keep the preset's values; the preset itself is unchanged.
    assert cfg.train.group_size == alfworld.train.group_size and alfworld.train.steps == 20
    assert config_io.apply_overrides(alfworld, ["train.steps=3", "train.steps=5"]).train.steps == 5


def test_command_line_spells_sequences_and_booleans_as_overrides_do():
    words = config_io.normalize_args(RunConfig, [
        "--env.task_types=pick_and_place_simple,look_at_obj_in_light",
        "--env.names=[\"alfworld\"]", "--experience.search_and_ask=yes", "--train.steps=3",
        "--env.task_types", "x", "--config=alfworld_cpu"])
    assert words == ["--env.task_types", "pick_and_place_simple", "look_at_obj_in_light",
                     "--env.names", "alfworld", "--experience.search_and_ask=True",
                     "--train.steps=3", "--env.task_types", "x", "--config=alfworld_cpu"]
    # ... so a run's command line and its figure arm's overrides make one config
    from experiments.diagnostics.expert_turn_cap import Command
    cmd = config_io.parse_preset_command(
        Command, ["--config=alfworld_cpu", "--env.task_types=pick_and_place_simple,"
                  "look_at_obj_in_light"], "alfworld_cpu", "", presets=PRESETS)
    assert cmd.cfg.env.task_types == ("pick_and_place_simple", "look_at_obj_in_light")


@pytest.mark.parametrize("override, words", [
    ("train.stepz=3", ["train.stepz", "train.steps"]),  # the closest key is suggested
    ("train.steps=x", ["train.steps", "INT"]),
    ("experience.mode=bogus", ["comp_rl", "none", "offline", "static_online", "exp_only"]),
    ("experience.search_and_ask=maybe", ["True", "False"]),
    ("train.group_size=1", ["group_size must be >= 2"]),  # the schema's own checks
    ("warm_start.line_repeat=0", ["warm_start.line_repeat must be >= 1"]),
    ("warm_start.actor_lr_end=0", ["warm_start.actor_lr_end must be in (0, 1]"]),
    ("experience.lesson_homes=0", ["experience.lesson_homes must be >= 1"]),
    ("steps", ["section.key=value"]),
])
def test_bad_overrides_say_what_is_valid(alfworld, override, words):
    with pytest.raises(config_io.ConfigError) as err:
        config_io.apply_overrides(alfworld, [override])
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("name", PRESETS.names())
def test_every_preset_round_trips_through_json(name, tmp_path):
    cfg = PRESETS.load(name)
    path = tmp_path / "config.json"
    config_io.save_config_json(cfg, str(path))
    assert config_io.load_config_json(RunConfig, str(path)) == cfg
    assert json.loads(path.read_text())["train"]["steps"] == cfg.train.steps


def test_a_saved_config_is_read_strictly(alfworld):
    data = config_io.config_to_dict(alfworld)
    data["train"]["stepz"] = 3
    with pytest.raises(config_io.ConfigError, match="stepz"):
        config_io.config_from_dict(RunConfig, data)
    data = config_io.config_to_dict(alfworld)
    data["train"]["steps"] = "many"
    with pytest.raises(config_io.ConfigError, match="train.steps"):
        config_io.config_from_dict(RunConfig, data)
    # Keys a file leaves out take the schema's defaults.
    assert config_io.config_from_dict(RunConfig, {"train": {"steps": 7}}).train.steps == 7


def test_unknown_preset_suggests_the_closest():
    message = PRESETS.unknown_message("alfworld_cp")
    assert "'alfworld_cpu'" in message and "minihack_room_cpu" in message
    assert PRESETS.unknown_message("alfworld_cpu") is None
    with pytest.raises(config_io.ConfigError, match="Did you mean"):
        PRESETS.load("alfworld_cp")


def test_profiles_of_the_paper_presets():
    """NAME:PROFILE picks a paper preset's profile; the default is released."""
    released, paper = PRESETS.load("alfworld"), PRESETS.load("alfworld:paper")
    assert PRESETS.load("alfworld:released") == released
    assert PRESETS.profiles("alfworld") == ("released", "paper")
    # What differs, and which way (BUILD.md's table lists each with its source).
    diff = {line.split(":")[0] for line in config_io.config_diff(released, paper)}
    assert {"rollout.max_turns", "advantages.normalize_std", "actor_loss.ratio_level",
            "experience.actor_critic", "train.actor_train_after"} <= diff
    assert (released.rollout.max_turns, paper.rollout.max_turns) == (30, 40)
    assert (released.advantages.normalize_std, paper.advantages.normalize_std) == (False, True)
    for cfg in (released, paper):  # both: one conversation a sample, the tool on
        assert cfg.rollout.conversation and cfg.train.sample_unit == "episode"
        assert cfg.experience.search_and_ask and cfg.rollout.prompt_style == "released"
    assert "no profile 'foo'" in PRESETS.unknown_message("alfworld:foo")
    assert "has no profiles" in PRESETS.unknown_message("alfworld_cpu:paper")
    with pytest.raises(config_io.ConfigError, match="released, paper"):
        PRESETS.load("minihack_room:fast")


def test_flatten_diff_and_format(alfworld):
    other = config_io.apply_overrides(alfworld, ["train.steps=3", "env.names=sokoban"])
    assert config_io.config_diff(alfworld, other) == [
        "env.names: ('alfworld',) -> ('sokoban',)", "train.steps: 20 -> 3"]
    flat = config_io.flatten_config(alfworld)
    assert flat["experience.bank.cap"] == 20_000
    assert set(flat) == set(config_io.leaf_types(RunConfig))
    listing = config_io.format_config(alfworld).splitlines()
    assert len(listing) == len(flat) and any(line.startswith("train.steps ") for line in listing)


def test_research_controls_have_their_own_section_after_the_method():
    fields = [f.name for f in dataclasses.fields(RunConfig)]
    assert fields[-1] == "controls"
    experience = {f.name for f in dataclasses.fields(RunConfig().experience)}
    assert not experience & {"oracle_noise", "oracle_source", "critic", "reward_baseline",
                             "ask_answers"}


def test_a_saved_config_with_a_control_at_its_old_place_loads_at_the_new_one():
    # Records made before the controls had a section hold them under experience.
    data = config_io.config_to_dict(_cpu())
    del data["controls"]
    data["experience"].update(critic="goal", reward_baseline="free", oracle_noise=2)
    cfg = config_io.config_from_dict(RunConfig, data)
    assert (cfg.controls.critic, cfg.controls.reward_baseline, cfg.controls.oracle_noise) == (
        "goal", "free", 2)
    assert cfg.controls.oracle_source == "own" and cfg.controls.ask_answers == "extractor"


def test_a_control_at_its_old_place_on_the_command_line_names_the_new_key():
    with pytest.raises(config_io.ConfigError, match="'experience.critic' is now 'controls.critic'"):
        config_io.apply_overrides(_cpu(), ["experience.critic=goal"])
    cfg = config_io.apply_overrides(_cpu(), ["controls.critic=goal",
                                             "experience.actor_critic=true"])
    assert cfg.judge == "goal"
    assert config_io.apply_overrides(_cpu(), ["controls.critic=goal"]).judge is None


def test_the_help_lists_the_controls_after_every_method_section():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "run.py"), "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert out.index("--controls.oracle_source") > out.index("--train.steps")
    assert out.index("--controls.critic") > out.index("--experience.actor_critic")


def test_threads_loading_configs_at_once_each_get_their_own():
    """A figure sweep's jobs check their runs' saved configs from threads at
    the same moment: each must read its own file (tyro is not thread-safe)."""
    import concurrent.futures as cf

    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import apply_overrides, config_from_dict, config_to_dict
    from experiments.configs import load_preset

    base = load_preset("alfworld_cpu")
    made = [apply_overrides(base, [f"train.steps={n}", f"warm_start.demos={n + 1}"])
            for n in range(2, 10)]
    dicts = [config_to_dict(c) for c in made]
    with cf.ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            got = list(pool.map(lambda d: config_from_dict(RunConfig, d), dicts))
            assert got == made
