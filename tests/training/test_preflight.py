"""The preflight (crl_jax/training/preflight.py) and the wrong invocations it
and the configuration's own checks turn into one line, status 2, no traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from crl_jax.training import preflight
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.run_dir import discard_untrained, entries, prepare_run_dir
from experiments.configs import load_preset
from models.config import config_to_hf, tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "experiments", "run.py")


def _hf_dir(path, family="qwen2", weights=True, tokenizer=True, config=None):
    """A stand-in checkpoint directory: what the preflight reads, no real weights."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config if config is not None else config_to_hf(tiny_config(family)), f)
    if weights:
        open(os.path.join(path, "model.safetensors"), "wb").close()
    if tokenizer:
        open(os.path.join(path, "tokenizer.json"), "w").close()
    return str(path)


def _paper(tmp_path, *extra):
    return apply_overrides(load_preset("alfworld"), [
        f"actor.checkpoint={_hf_dir(tmp_path / 'actor')}",
        f"extractor.checkpoint={_hf_dir(tmp_path / 'extractor', 'qwen3')}",
        f"experience.embedder={_hf_dir(tmp_path / 'embedder', 'qwen3')}",
        "env.train_split=generated", "env.eval_split=generated_eval", *extra])


def test_a_complete_paper_setup_has_no_problems(tmp_path):
    assert preflight.problems(_paper(tmp_path), device_count=16) == []


def test_every_checkpoint_problem_is_found_at_once(tmp_path):
    cfg = _paper(tmp_path)
    os.remove(tmp_path / "actor" / "model.safetensors")
    os.remove(tmp_path / "extractor" / "tokenizer.json")
    _hf_dir(tmp_path / "embedder", config={"model_type": "gpt2"})
    found = preflight.problems(apply_overrides(cfg, [f"actor.tokenizer={tmp_path}/tok"]), 16)
    assert len(found) == 4, found
    actor, tok, extractor, embedder = found
    assert actor.startswith(f"--actor.checkpoint={tmp_path / 'actor'}: no *.safetensors")
    assert tok.startswith(f"--actor.tokenizer={tmp_path}/tok: no tokenizer")
    assert extractor.startswith("--extractor.checkpoint=") and "tokenizer.json" in extractor
    assert embedder.startswith("--experience.embedder=") and "'gpt2'" in embedder


def test_a_missing_checkpoint_names_the_key_and_the_guide(tmp_path):
    cfg = _paper(tmp_path, f"actor.checkpoint={tmp_path}/nowhere")
    (line,) = preflight.problems(cfg, 16)
    assert line.startswith(f"--actor.checkpoint={tmp_path}/nowhere: no such directory")
    assert "BUILD.md" in line and "--actor.checkpoint=DIR" in line


def test_roles_unused_by_the_mode_are_not_checked(tmp_path):
    cfg = _paper(tmp_path, f"extractor.checkpoint={tmp_path}/nowhere",
                 f"experience.embedder={tmp_path}/nowhere", "experience.mode=none",
                 "experience.actor_critic=false", "extractor.devices=last:8",
                 "actor.devices=first:8")
    assert preflight.problems(cfg, 8) == []  # GRPO: no extractor, no bank


@pytest.mark.parametrize("actor, extractor, count, words", [
    ("first:8", "last:8", 8, ["share 8 of this host's 8 devices"]),
    ("first:6", "last:4", 8, ["share 2 of this host's 8"]),
    ("all", "last:4", 8, ["share 4 of"]),
    ("first:16", "last:8", 8, ["--actor.devices=first:16: this host has 8 devices"]),
])
def test_device_layouts_that_cannot_work_here(tmp_path, actor, extractor, count, words):
    cfg = _paper(tmp_path, f"actor.devices={actor}", f"extractor.devices={extractor}")
    (line,) = preflight.device_problems(cfg, count)
    for word in words:
        assert word in line


@pytest.mark.parametrize("actor, extractor, count", [
    ("first:8", "last:8", 16), ("first:4", "last:4", 8), ("all", "all", 8)])
def test_device_layouts_that_work_here(tmp_path, actor, extractor, count):
    cfg = _paper(tmp_path, f"actor.devices={actor}", f"extractor.devices={extractor}")
    assert preflight.device_problems(cfg, count) == []


def test_pack_splits_need_their_games(tmp_path, monkeypatch):
    monkeypatch.setenv("CRL_ALFWORLD_PACK", str(tmp_path / "no_pack"))
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    cfg = apply_overrides(_paper(tmp_path), ["env.train_split=train",
                                             "env.eval_split=valid_unseen"])
    found = preflight.env_problems(cfg)
    assert [line.split(":")[0] for line in found] == ["--env.train_split=train",
                                                      "--env.eval_split=valid_unseen"]
    assert all("no_pack" in line and "$ALFWORLD_DATA" in line for line in found)
    assert preflight.env_problems(load_preset("alfworld_cpu")) == []  # generated games


def _run(*args, cwd=ROOT, checkpoints="/nonexistent/checkpoints"):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "COLUMNS": "100", "XLA_FLAGS": "",
           "CRL_CHECKPOINTS": checkpoints}  # one CPU device: the tests' fake mesh is theirs
    return subprocess.run([sys.executable, RUN, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("args, words", [
    (["--config=alfworld"], ["--actor.checkpoint=/nonexistent/checkpoints/Qwen2.5-7B-Instruct",
                             "--extractor.checkpoint=", "--experience.embedder=",
                             "$CRL_CHECKPOINTS, now /nonexistent/checkpoints"]),
    (["--actor.devices=frist:8"], ["devices='frist:8'", "first:N"]),
    (["--actor.dtype=bf16"], ["dtype='bf16'", "bfloat16"]),
    (["--env.train_split=trian"], ["env.train_split='trian'", "generated"]),
    (["--train.group_size=1"], ["train.group_size must be >= 2"]),
    (["--distributed"], ["no multi-process job", "JAX_COORDINATOR_ADDRESS", "SLURM_JOB_ID"]),
    (["--actor.devices=first:4"], ["--actor.devices=first:4: this host has 1 device"]),
])
def test_a_wrong_invocation_is_one_error_and_leaves_no_directory(tmp_path, args, words):
    out = tmp_path / "run"
    done = _run(*args, f"--out_dir={out}", "--train.steps=1")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr
    assert not out.exists()


def test_preflight_alone_says_ready(tmp_path):
    done = _run("--preflight", f"--out_dir={tmp_path / 'run'}")
    assert done.returncode == 0, done.stderr
    assert "alfworld_cpu is ready to run here (1 device)" in done.stdout
    assert not (tmp_path / "run").exists()


def test_a_run_that_trained_nothing_leaves_its_directory_as_it_was(tmp_path):
    cfg = load_preset("alfworld_cpu")
    made = tmp_path / "new"
    before = entries(str(made))
    prepare_run_dir(cfg, str(made))
    (made / "log.txt").write_text("failed while loading\n")
    assert discard_untrained(str(made), before) and not made.exists()

    kept = tmp_path / "given"  # a directory the user made, holding a file of theirs
    kept.mkdir()
    (kept / "notes.md").write_text("mine")
    before = entries(str(kept))
    prepare_run_dir(cfg, str(kept))
    os.makedirs(kept / "tokenizer")
    assert discard_untrained(str(kept), before)
    assert sorted(os.listdir(kept)) == ["notes.md"]
    prepare_run_dir(cfg, str(kept))  # the same command runs again, no flag needed


@pytest.mark.parametrize("work", ["metrics.jsonl", "warm_start_progress", "checkpoints/3"])
def test_a_run_that_trained_keeps_its_directory_for_resume(tmp_path, work):
    cfg = load_preset("alfworld_cpu")
    out = tmp_path / "run"
    before = entries(str(out))
    prepare_run_dir(cfg, str(out))
    path = out / work
    if work.endswith(".jsonl"):
        path.write_text("{}\n")
    else:
        path.mkdir(parents=True)
    assert not discard_untrained(str(out), before)
    assert (out / "config.json").exists() and path.exists()
