"""End-to-end runs: every CPU preset for one or two steps, and resume after a crash."""
import os
import threading

import jax
import numpy as np
import pytest

from crl_jax.training.config_io import apply_overrides

from experiments.configs import load_preset
from crl_jax.training.metrics import read_metrics
from crl_jax.training import loop
from crl_jax.training.components import build_run, task_pool
from crl_jax.training.loop import run_training
from crl_jax.training.step import RunState, train_step

SMALL = ["train.steps=2", "train.tasks_per_step=2", "train.group_size=2", "train.eval_every=2",
         "train.checkpoint_every=2", "warm_start.demos=6", "warm_start.actor_steps=2",
         "warm_start.extractor_steps=2", "warm_start.batch=8", "warm_start.vocab_size=400",
         "rollout.max_turns=3", "env.num_eval_tasks=2", "env.num_generated=8",
         "experience.extractor_train_after=0", "experience.bank.train_batch_size=2",
         "experience.extractor_max_new_tokens=16", "experience.merge_every=1",
         "actor_optim.micro_batch=8", "warm_start.cache_dir=",
         # 4 of the 8 games for RL, the others demonstrated (alfworld_cpu keeps them apart)
         "train.task_pool=4",
         "extractor_optim.micro_batch=4"]


def _config(preset, tmp_path, extra=()):
    return apply_overrides(load_preset(preset), SMALL + [f"train.out_dir={tmp_path}", *extra])


# The multi-task and WebShop presets run the same trainer on environments
# whose own tests run by default: with the slow tests (the default suite's
# 15-minute budget on 2 cores).
@pytest.mark.parametrize("preset", [
    "alfworld_cpu", "minihack_room_cpu", pytest.param("webshop_cpu", marks=pytest.mark.slow),
    pytest.param("multitask3_cpu", marks=pytest.mark.slow), "swe_cpu"])
def test_cpu_preset_runs(preset, tmp_path):
    # SWE prompts carry a whole issue: shorter windows keep the compile small.
    extra = (["rollout.max_new_tokens=24", "rollout.max_prompt_tokens=256", "rollout.obs_chars=300"]
             if preset == "swe_cpu" else [])
    if preset == "alfworld_cpu":  # two PPO mini-batch updates per rollout batch
        extra.append("train.actor_mini_batches=2")
    # Two steps where the second reads a bank the first filled (the paper's two
    # CPU environments); one step, evaluated and saved, for the others: their
    # second step would run the same code again (multitask3 at three times
    # the compiles and episodes).
    steps = 2 if preset in ("alfworld_cpu", "minihack_room_cpu") else 1
    extra += [f"train.steps={steps}", f"train.eval_every={steps}", f"train.checkpoint_every={steps}"]
    cfg = _config(preset, tmp_path, extra)
    history = run_training(cfg, str(tmp_path))
    rows = read_metrics(str(tmp_path / "metrics.jsonl"))
    assert [r["step"] for r in rows] == list(range(steps + 1))
    last = rows[-1]
    n_envs = len(cfg.env.names)
    assert last["train/episodes"] == 2 * 2 * n_envs
    assert 0.0 <= last["train/success"] <= 1.0
    assert "eval_with_exp/success" in last and "eval_no_exp/success" in last
    assert np.isfinite(last["actor/loss"]) and last["bank/size"] >= 0
    assert last["actor/updates"] == cfg.train.actor_mini_batches
    assert last["rollout/tokens"] > 0  # rollout throughput, every step
    assert 0 < last["rollout/tokens_per_s"] <= last["rollout/sampler_tokens_per_s"]
    if n_envs > 1:  # per-environment evaluation beside the pooled numbers
        for env in cfg.env.names:
            assert last[f"eval_no_exp/{env}/episodes"] == 2
    assert last["manager/episodes"] >= 1  # episodes reached the extractor
    assert os.path.isdir(tmp_path / "checkpoints" / str(steps))
    # the warm start saves at its last step, and that save goes once a
    # checkpoint holds the weights
    assert not os.path.exists(tmp_path / "warm_start_progress")
    assert history[-1]["train/episodes"] == last["train/episodes"]


class _Crash(RuntimeError):
    pass


# The default suite's resume test is tests/training/test_sync_runs.py (a SIGKILLed
# Comp. RL run resumes to equal metrics, bank and parameters); this one, the
# GRPO path crashing in-process, runs with the slow tests.
@pytest.mark.slow
def test_resume_after_crash_equals_uninterrupted_run(tmp_path, monkeypatch):
    extra = ["experience.mode=none", "train.steps=4", "train.checkpoint_every=2",
             "train.eval_every=0"]
    full = build_run(_config("alfworld_cpu", tmp_path / "full", extra), str(tmp_path / "full"))
    run_training(full.cfg, run=full)
    with pytest.raises(FileExistsError, match="resume"):  # a finished run is not overwritten
        run_training(full.cfg, run=full)
    want = read_metrics(str(tmp_path / "full" / "metrics.jsonl"))
    want_params = jax.tree.map(np.asarray, full.actor.params)

    out = str(tmp_path / "crashed")
    real_step = loop.train_step

    def step_or_crash(run, state):
        if state.step == 3:  # dies during step 4, after the step-2 checkpoint
            raise _Crash("simulated crash")
        return real_step(run, state)

    monkeypatch.setattr(loop, "train_step", step_or_crash)
    with pytest.raises(_Crash):
        run_training(_config("alfworld_cpu", out, extra), out)
    monkeypatch.setattr(loop, "train_step", real_step)
    assert [r["step"] for r in read_metrics(os.path.join(out, "metrics.jsonl"))] == [1, 2, 3]

    resumed = build_run(_config("alfworld_cpu", out, extra), out, resume=True)
    run_training(resumed.cfg, resume=True, run=resumed)
    got = read_metrics(os.path.join(out, "metrics.jsonl"))
    assert [r["step"] for r in got] == [1, 2, 3, 4]
    for a, b in zip(got, want):
        for key in ("train/success", "train/actions", "actor/loss", "actor/entropy_mean"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (a["step"], key)
    for a, b in zip(jax.tree.leaves(jax.tree.map(np.asarray, resumed.actor.params)),
                    jax.tree.leaves(want_params)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_unknown_override_lists_valid_keys(tmp_path):
    with pytest.raises(ValueError, match="steps"):
        _config("alfworld_cpu", tmp_path, ["train.stepz=3"])


def test_background_failure_stops_the_run_with_the_error(tmp_path, monkeypatch):
    from crl_jax.experience import ManagerFailedError
    from crl_jax.rl.extractor import ExtractorAgent

    def broken(self, request):
        raise RuntimeError("extractor exploded")

    cfg = _config("alfworld_cpu", tmp_path, ["train.steps=3", "train.eval_every=0"])
    run = build_run(cfg, str(tmp_path))
    monkeypatch.setattr(ExtractorAgent, "__call__", broken)
    with pytest.raises(ManagerFailedError, match="extractor exploded"):
        run_training(cfg, run=run)
    # The background threads are stopped with the run.
    assert not [t for t in threading.enumerate() if t.name == "crl-extractor-train" and t.is_alive()]


def test_task_pool_restricts_rl_tasks_not_the_warm_start(tmp_path):
    cfg = _config("alfworld_cpu", tmp_path, ["experience.mode=none", "train.task_pool=3",
                                             "warm_start.demos=8", "train.pool_disjoint=false"])
    tr = build_run(cfg, str(tmp_path))
    every = tr.train_sources[0].tasks
    pool = tr.rl_sources[0].tasks
    assert len(every) == 8 and len(pool) == 3 and set(pool) <= set(every)
    assert len({d.task for d in tr.demos}) == 8  # the warm start saw the whole pool
    assert task_pool(cfg, tr.train_sources[0]).tasks == pool  # fixed by the seed (resume)
    played = []
    real_play = tr.engine.play

    def recording_play(envs, tasks, *args, **kwargs):
        played.extend(tasks)
        return real_play(envs, tasks, *args, **kwargs)

    tr.engine.play = recording_play
    state = RunState.fresh(cfg.train.seed)
    for _ in range(3):
        state, _ = train_step(tr, state)
    tr.close()
    assert len(played) == 3 * 2 * 2 and set(played) <= set(pool)
    with pytest.raises(ValueError, match="task_pool=1 is smaller"):
        _config("alfworld_cpu", tmp_path, ["train.task_pool=1"])
