"""Tests for crl_jax.training.metrics.

TensorBoard files are read back by TensorBoard's own EventAccumulator, the
reader the TensorBoard UI uses, independent of the writer (tensorboardX).
"""

from __future__ import annotations

import glob
import json
import math

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from crl_jax.training import metrics


def _tensorboard_scalars(log_dir) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_jsonl_and_tensorboard_hold_what_was_written(tmp_path):
    with metrics.MetricsWriter(str(tmp_path)) as writer:
        writer.write(1, {"success": 0.25, "loss": np.float32(1.5), "episodes": 8})
        writer.write(2, {"success": np.float64(0.5), "flag": True, "neg": -3})
        writer.write(3, {"loss": float("nan")})
    rows = metrics.read_metrics(str(tmp_path / "metrics.jsonl"))
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[0]["success"] == 0.25 and rows[0]["loss"] == 1.5 and rows[0]["episodes"] == 8
    assert isinstance(rows[0]["episodes"], int) and rows[1]["flag"] is True
    assert math.isnan(rows[2]["loss"]) and "time" in rows[0]

    tb = _tensorboard_scalars(tmp_path)
    assert tb["success"] == [(1, 0.25), (2, 0.5)]
    assert tb["episodes"] == [(1, 8.0)] and tb["flag"] == [(2, 1.0)] and tb["neg"] == [(2, -3.0)]
    assert tb["loss"][0] == (1, 1.5) and tb["loss"][1][0] == 3 and math.isnan(tb["loss"][1][1])


def test_resume_drops_the_steps_it_will_redo(tmp_path):
    writer = metrics.MetricsWriter(str(tmp_path))
    for step in range(1, 6):
        writer.write(step, {"x": float(step)})
    writer.close()
    # Simulate a crash that tore the last line.
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 6, "x"')
    writer = metrics.MetricsWriter(str(tmp_path))
    assert [r["step"] for r in metrics.read_metrics(writer.path)] == [1, 2, 3, 4, 5]
    writer.close()
    writer = metrics.MetricsWriter(str(tmp_path), purge_after=3)  # resumed from step 3
    writer.write(4, {"x": 40.0})
    writer.close()
    rows = metrics.read_metrics(writer.path)
    assert [(r["step"], r["x"]) for r in rows] == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0)]
    with open(writer.path) as f:  # every line is complete JSON
        assert all(json.loads(line) for line in f)
    # TensorBoard forgets the first run's steps 4 and 5.
    assert _tensorboard_scalars(tmp_path)["x"] == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0)]


def test_write_rejects_bad_values(tmp_path):
    with metrics.MetricsWriter(str(tmp_path), use_tensorboard=False) as writer:
        with pytest.raises(ValueError, match="'vec'.*shape \\(3,\\)"):
            writer.write(1, {"vec": np.zeros(3)})
        with pytest.raises(ValueError, match="reserved"):
            writer.write(1, {"step": 1})
        with pytest.raises(ValueError, match="'name'"):
            writer.write(1, {"name": "abc"})
    assert metrics.read_metrics(str(tmp_path / "metrics.jsonl")) == []
    assert not glob.glob(str(tmp_path / "events.out.tfevents.*"))


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_timer_and_phase_timings():
    clock = FakeClock()
    timings = metrics.PhaseTimings(clock=clock)
    for duration in (1.5, 2.0):
        with timings.time("rollout"):
            clock.now += duration
    with pytest.raises(RuntimeError):
        with timings.time("update"):
            clock.now += 0.25
            raise RuntimeError("boom")
    assert timings.pop_all() == {"time/rollout": 3.5, "time/update": 0.25}
    assert timings.pop_all() == {}

    totals = {}
    with metrics.Timer("a", totals, clock=clock) as timer:
        clock.now += 3.0
    assert timer.elapsed == 3.0 and totals == {"a": 3.0}


def test_clock_metrics_are_named_so():
    from crl_jax.training.metrics import is_clock_metric

    for key in ("time", "time/rollout", "train/retrieval_s_per_query",
                "eval_with_exp/critic_s_per_entry", "rollout/tokens_per_s",
                "rollout/sampler_tokens_per_s"):
        assert is_clock_metric(key), key
    for key in ("train/success", "rollout/tokens", "train/tokens_per_action", "timeouts"):
        assert not is_clock_metric(key), key
