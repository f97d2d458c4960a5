"""experiments/run.py as a user meets it: --help, errors, run directories."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from crl_jax.training import config_io

from experiments import configs as presets
from crl_jax.training.config import RunConfig
from crl_jax.training.run_dir import RunDirError, prepare_run_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "experiments", "run.py")


def _run(*args: str) -> subprocess.CompletedProcess:
    # 80 columns: tyro puts the help in one column (wider, it packs several side by side).
    env = {**os.environ, "COLUMNS": "80", "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, RUN, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def _help_blocks(text: str) -> dict[str, str]:
    """--help's text after each option, up to the next option."""
    blocks, key = {}, None
    for line in text.splitlines():
        line = line.strip(" │╭╮╰╯─")
        m = re.match(r"--([a-z_.0-9]+)", line)
        if m:
            key = m.group(1)
            blocks[key] = line[m.end():]
        elif key:
            blocks[key] += " " + line
    return blocks


def test_help_lists_every_preset_and_every_key_with_a_description():
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    for name in presets.PRESETS.names():
        assert re.search(rf"^\s*{name}\s+\S", done.stdout, re.M), name
    blocks = _help_blocks(done.stdout)
    keys = set(config_io.leaf_types(RunConfig))
    assert keys <= set(blocks), sorted(keys - set(blocks))
    undocumented = [k for k in sorted(keys)
                    if not re.sub(r"\(default: .*\)|[A-Z]+\b|\{[^}]*\}|[|\[\].]", "",
                                  blocks[k]).strip()]
    assert not undocumented, undocumented


@pytest.mark.parametrize("args, words", [
    (["--train.stepz=3"], ["--train.steps"]),
    (["--config=alfwrld"], ["Did you mean 'alfworld'", "alfworld_cpu"]),
    (["--experience.mode=bogus"], ["comp_rl", "static_online"]),
])
def test_a_bad_command_line_is_one_error_and_status_2(args, words):
    done = _run(*args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr


def test_an_existing_run_is_refused_before_any_work(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text("{}")
    done = _run(f"--out_dir={out}", "--train.steps=1")
    assert done.returncode == 2 and "--resume" in done.stderr and "Traceback" not in done.stderr
    assert sorted(os.listdir(out)) == ["config.json"]  # nothing written, nothing trained
    assert (out / "config.json").read_text() == "{}"


def test_resume_of_nothing_is_refused(tmp_path):
    done = _run(f"--out_dir={tmp_path / 'typo'}", "--resume")
    assert done.returncode == 2 and "no run to resume" in done.stderr


def test_resume_of_a_run_without_a_checkpoint_is_refused_unless_start_fresh(tmp_path):
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"),
                                    [f"train.out_dir={tmp_path}"])
    prepare_run_dir(cfg, str(tmp_path))  # a run that died before its first checkpoint
    done = _run(f"--out_dir={tmp_path}", "--resume")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(tmp_path) in done.stderr and "no checkpoint" in done.stderr
    assert "--start_fresh" in done.stderr
    prepare_run_dir(cfg, str(tmp_path), resume=True, start_fresh=True)  # asked for: fine
    os.makedirs(tmp_path / "checkpoints" / "4")
    prepare_run_dir(cfg, str(tmp_path), resume=True)  # something to resume: fine


def test_print_config_shows_the_effective_run_directory(tmp_path):
    done = _run("--config=minihack_room_cpu", f"--out_dir={tmp_path}", "--train.steps=3",
                "--experience.search_and_ask=true", "--print_config")
    assert done.returncode == 0, done.stderr
    flat = dict(re.match(r"(\S+)\s+= (.*)", line).groups() for line in done.stdout.splitlines())
    assert flat["train.out_dir"] == repr(str(tmp_path))
    assert flat["train.steps"] == "3" and flat["experience.search_and_ask"] == "True"
    assert flat["name"] == "'minihack_room_cpu'"


def test_run_dir_records_the_config_and_guards_resume(tmp_path):
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"),
                                    [f"train.out_dir={tmp_path}"])
    path = prepare_run_dir(cfg, str(tmp_path))
    assert json.load(open(path))["train"]["out_dir"] == str(tmp_path)
    with pytest.raises(RunDirError, match="already holds a run"):
        prepare_run_dir(cfg, str(tmp_path))
    os.makedirs(tmp_path / "checkpoints" / "10")  # it saved one: there is something to resume
    assert prepare_run_dir(cfg, str(tmp_path), resume=True) == path  # same settings: fine
    changed = config_io.apply_overrides(cfg, ["train.steps=7", "actor_optim.lr=0.1"])
    with pytest.raises(RunDirError) as err:
        prepare_run_dir(changed, str(tmp_path), resume=True)
    assert "actor_optim.lr: 0.0005 -> 0.1" in str(err.value) and "train.steps: 20 -> 7" in str(err.value)
    prepare_run_dir(changed, str(tmp_path), resume=True, accept_changed_config=True)
    assert config_io.load_config_json(RunConfig, path).train.steps == 7


def test_resume_reads_the_saved_config(tmp_path):
    """With --resume the command line changes the saved run's settings, not the
    preset's: a run started with overrides resumes without repeating them."""
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"),
                                    [f"train.out_dir={tmp_path}", "train.steps=3"])
    prepare_run_dir(cfg, str(tmp_path))
    done = _run(f"--out_dir={tmp_path}", "--resume", "--print_config")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^train\.steps\s+= 3$", done.stdout, re.M)


def test_warm_start_stage_builds_the_entry_a_run_then_loads(tmp_path):
    from crl_jax.training.warm_actors import actor_inputs_key
    from crl_jax.training.warm_cache import warm_start_key

    tiny = [f"--warm_start.cache_dir={tmp_path}", "--warm_start.demos=4",
            "--warm_start.actor_steps=2", "--warm_start.extractor_steps=1", "--warm_start.batch=4",
            "--warm_start.vocab_size=400", "--rollout.max_turns=3", "--env.num_generated=12",
            "--train.task_pool=4"]
    stage = os.path.join(ROOT, "experiments", "warm_start.py")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, stage, *tiny], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"), tiny)
    entry = tmp_path / warm_start_key(cfg)
    assert f"warm start cached: {entry}" in done.stdout
    assert sorted(os.listdir(entry)) == ["actor.safetensors", "actor_inputs.txt",
                                         "extractor.safetensors", "losses.json", "tokenizer"]
    os.remove(entry / "actor_inputs.txt")  # as an entry made before the file existed
    again = subprocess.run([sys.executable, stage, *tiny], capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=600)
    assert again.returncode == 0 and "already cached" in again.stdout
    assert (entry / "actor_inputs.txt").read_text().strip() == actor_inputs_key(cfg)


def test_a_run_ends_with_its_table_and_a_resume_shows_the_whole_run(tmp_path):
    """run.py from start to end on tiny settings (oracle experience: guided
    and free episodes, no extractor): the closing table has both training
    windows' guided and free columns and every evaluation; resumed for one
    more step, it still shows the steps before the resume."""
    from tests.training.test_runs import SMALL
    out = tmp_path / "run"
    keys = [f"--{k}" for k in SMALL] + ["--experience.mode=oracle", "--train.eval_every=1",
                                        "--train.checkpoint_every=1"]
    done = _run(f"--out_dir={out}", *keys)
    assert done.returncode == 0, done.stderr[-2000:]
    table = done.stdout
    assert "| training steps | success | guided | free | guided - free |" in table
    assert re.search(r"^\| 1-2 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+ \|", table, re.M)
    for step in (0, 1, 2):  # evaluated with and without experience
        assert re.search(rf"^\| {step} \| [0-9.]+ \| [0-9.]+ \|", table, re.M), table
    again = _run(f"--out_dir={out}", "--resume", "--train.steps=3", "--accept_changed_config")
    assert again.returncode == 0, again.stderr[-2000:]
    assert re.search(r"^\| 1-3 \|", again.stdout, re.M) and re.search(r"^\| 0 \|", again.stdout,
                                                                       re.M)
