"""experiments/diagnostics/extractor_rl_gain.py: the warm-started extractor against a
checkpoint's, on the same inputs."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from crl_jax.experience.training_buffer import ExtractorSample
from crl_jax.training.components import build_run
from crl_jax.training.entry_tracking import EntryTracker
from crl_jax.training.loop import run_training
from crl_jax.training.metrics import read_metrics
from crl_jax.training.run_dir import prepare_run_dir
from tests.training import sync_driver
from tests.training.test_runs import _config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_script_names_a_directory_it_cannot_compare_and_shares_no_flag_at_import(tmp_path):
    import experiments.figures.reproduce
    import experiments.diagnostics.extractor_rl_gain  # noqa: F401  (defines its flags only as a script)
    script = os.path.join(ROOT, "experiments", "diagnostics", "extractor_rl_gain.py")
    proc = subprocess.run([sys.executable, script, f"--runs={tmp_path}"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0 and "has no config.json" in proc.stderr


def test_run_dirs_that_cannot_be_compared_are_named(tmp_path):
    from experiments.diagnostics.extractor_rl_gain import check_run_dir
    assert "no config.json" in check_run_dir(str(tmp_path))
    cfg = _config("minihack_room_cpu", tmp_path, ["experience.mode=none"])
    from crl_jax.training.config_io import save_config_json
    save_config_json(cfg, str(tmp_path / "config.json"))
    (tmp_path / "warm_start.json").write_text(json.dumps({"key": "k"}))
    os.makedirs(tmp_path / "checkpoints")
    assert "without experience" in check_run_dir(str(tmp_path))
    cfg = _config("minihack_room_cpu", tmp_path, [f"warm_start.cache_dir={tmp_path / 'cache'}"])
    save_config_json(cfg, str(tmp_path / "config.json"))
    assert "has no extractor in" in check_run_dir(str(tmp_path))  # not in the cache


def _remember_every_episode(self, episodes):
    """EntryTracker.remember without the won filter: a tiny actor never
    wins, and the pool scores need trajectories."""
    for ep in episodes:
        if (ep.env_name, ep.task) in self.plans:
            self.latest[(ep.env_name, ep.task)] = (ep.goal, ep.trajectory_text(self.obs_chars))


@pytest.mark.slow
def test_checkpoint_scores_are_the_runs_own_and_the_warm_start_is_the_first(tmp_path, monkeypatch):
    """A 3-step Comp. RL run whose extractor trains from step 2 (the sync
    tests' extractor that always adds an entry, rewards made to differ): at the step-1 checkpoint
    both extractors are the warm start (equal scores); at step 3 the
    checkpoint's pool scores are the run's own step-3 evaluation, and its
    parameters are no longer the warm start's."""
    from experiments.diagnostics.extractor_rl_gain import check_run_dir, compare
    sync_driver.patch(monkeypatch)
    monkeypatch.setattr(EntryTracker, "remember", _remember_every_episode)
    # every tiny episode loses, so every r(m) is -1 and CISPO's advantages
    # are 0: a reward that differs between samples makes the extractor move
    # (read once per drawn sample: a batch of 2 gets -1 and +1)
    signs = itertools.cycle((-1.0, 1.0))
    monkeypatch.setattr(ExtractorSample, "reward", property(lambda self: next(signs)))
    out = tmp_path / "run"
    cfg = _config("alfworld_cpu", out, [
        f"warm_start.cache_dir={tmp_path / 'cache'}", "experience.sync=true", "train.steps=3",
        "train.eval_every=3", "train.checkpoint_every=1",
        "experience.extractor_updates_per_step=2", "experience.bank.train_batch_size=2"])
    prepare_run_dir(cfg, str(out))  # config.json, as run.py writes it
    run = build_run(cfg, str(out))
    run_training(cfg, run=run)
    rows = read_metrics(str(out / "metrics.jsonl"))
    assert sum(r.get("extractor/updates", 0) for r in rows) >= 1
    assert check_run_dir(str(out)) is None
    first = compare(str(out), 1, games=2)
    assert first["step"] == 1
    for inputs in ("pool", "held_out"):
        assert first[inputs]["warm"] == first[inputs]["rl"]
    last = compare(str(out), 0, games=2)
    assert last["step"] == 3
    want = rows[-1]
    assert last["pool"]["rl"]["games"] == want["extractor/pool_games"] >= 1
    assert last["pool"]["rl"]["step_f1"] == pytest.approx(want["extractor/pool_step_f1"])
    assert last["pool"]["rl"]["exact"] == pytest.approx(want["extractor/pool_exact"])
    # the extractor trained: the checkpoint's weights are not the warm start's
    from crl_jax.training.checkpointing import RunCheckpointer
    rebuilt = build_run(cfg, str(tmp_path / "scratch"))
    ckpt = RunCheckpointer(str(out / "checkpoints"))
    try:
        trained = ckpt.restore(3, targets={"extractor_params": rebuilt.extractor.params})
    finally:
        ckpt.close()
        rebuilt.close()
    pairs = zip(jax.tree.leaves(rebuilt.extractor.params),
                jax.tree.leaves(trained.trees["extractor_params"]))
    assert any(not np.array_equal(np.asarray(a), np.asarray(b)) for a, b in pairs)
