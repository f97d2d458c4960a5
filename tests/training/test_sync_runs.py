"""experience.sync: a seed repeats its run, and a run killed at any moment
after a checkpoint resumes to the same metrics, bank and parameters."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from crl_jax.experience import load_state
from crl_jax.training.checkpointing import RunCheckpointer
from crl_jax.training.components import build_run
from crl_jax.training.loop import run_training
from crl_jax.training.metrics import is_clock_metric, read_metrics
from tests.training import sync_driver
from tests.training.test_runs import SMALL, _config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Comp. RL with consolidation, merges and guided episodes every step; the
# extractor trains from step 2 on (step 1's entries guide step 2's episodes,
# whose outcomes reward them), two CISPO updates a step on batches of 1.
SYNC = ["experience.sync=true", "train.steps=3", "train.eval_every=3", "train.checkpoint_every=1",
        "experience.extractor_updates_per_step=2", "experience.bank.train_batch_size=1"]


def _no_clock(rows: list[dict]) -> list[dict]:
    """Metrics without the wall-clock keys (time, time/..., latencies and
    rates: crl_jax.training.metrics.is_clock_metric)."""
    return [{k: v for k, v in r.items() if not is_clock_metric(k)} for r in rows]


def _bank_of(out: str) -> list:
    ckpt = RunCheckpointer(os.path.join(out, "checkpoints"))
    try:
        step = ckpt.latest_step()
        path = os.path.join(ckpt.directory, str(step), "files", "bank")
        state = load_state(path, 256)
    finally:
        ckpt.close()
    stats = dict(state.stats)
    return [(e.id, e.task_key, e.text, e.source_call, stats[e.id].retrieval_count,
             stats[e.id].last_retrieval_time, stats[e.id].train_count) for e in state.entries]


def _params(run) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree.leaves((run.actor.params, run.extractor.params))]


def _latest_checkpoint(out: str) -> int:
    ckpts = os.path.join(out, "checkpoints")
    steps = [int(d) for d in os.listdir(ckpts) if d.isdigit()] if os.path.isdir(ckpts) else []
    return max(steps, default=0)


def test_a_seed_repeats_its_run_and_a_killed_run_resumes_exactly(tmp_path, monkeypatch):
    """Two runs of one seed: one uninterrupted, in this process; the other
    run.py in its own process group, SIGKILLed at a random moment after the
    first checkpoint that holds a trained extractor (while a step, a
    consolidation, an extractor update or the next save is under way), then
    resumed. Every metric but the wall clock (the steps before the kill, made
    by the other process from scratch, and those after the resume), the
    final bank and both models' final parameters are equal."""
    sync_driver.patch(monkeypatch)
    keys = list(SYNC)
    full_dir = tmp_path / "full"
    full = build_run(_config("alfworld_cpu", full_dir, keys), str(full_dir))
    run_training(full.cfg, run=full)
    with pytest.raises(FileExistsError, match="resume"):  # a finished run is not overwritten
        run_training(full.cfg, run=full)
    want_rows = _no_clock(read_metrics(str(full_dir / "metrics.jsonl")))
    # the extractor first trains in step 2 (its buffer's entries need a step of use first)
    assert want_rows[2]["step"] == 2 and want_rows[2].get("extractor/updates", 0) >= 1
    assert want_rows[-1]["bank/size"] >= 1 and want_rows[-1]["manager/episodes"] == 3 * 2 * 2

    out = tmp_path / "killed"
    args = [f"--{k}" for k in SMALL + keys] + [f"--out_dir={out}"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.training.sync_driver", *args], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while _latest_checkpoint(str(out)) < 2:  # the first checkpoint with a trained extractor
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "no checkpoint within 240 s"
        time.sleep(0.05)
    delay = random.uniform(0.0, 2.0)
    time.sleep(delay)
    assert proc.poll() is None, "the run ended before the kill"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = json.loads(json.dumps(read_metrics(str(out / "metrics.jsonl"))))
    assert done and done[-1]["step"] < 3, f"killed after {delay:.2f} s"

    resumed = build_run(_config("alfworld_cpu", out, keys), str(out), resume=True)
    run_training(resumed.cfg, resume=True, run=resumed)
    got_rows = _no_clock(read_metrics(str(out / "metrics.jsonl")))
    note = f"killed {delay:.2f} s after checkpoint 2, at step {done[-1]['step']}"
    assert [r["step"] for r in got_rows] == [r["step"] for r in want_rows], note
    for got, want in zip(got_rows, want_rows):
        assert got == want, (note, got["step"])
    assert _bank_of(str(out)) == _bank_of(str(full_dir)), note
    for a, b in zip(_params(resumed), _params(full)):
        np.testing.assert_array_equal(a, b, err_msg=note)
