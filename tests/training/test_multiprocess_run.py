"""run.py as a multi-controller JAX program (BUILD.md "Multi-host (GPU clusters, TPU pods) and several processes").

alfworld_cpu, shortened, with Comp. RL's deterministic pipeline
(experience.sync: consolidation, merge and extractor updates at fixed
points) runs as 2 local CPU processes of one job (``--cpu_processes=2``:
one CPU device each, gloo collectives; each process resets and steps only
its share of the environments and keeps its own replica of the bank) and
as one process with 2 CPU devices. Both lay the models out on the same
2-device mesh and run the same programs on the same global batches, so
every metric but the wall clock, the bank and both models' final
parameters must be equal; the tolerance on the parameters (1e-6 relative)
is only for the order in which a cross-process reduction may add its terms.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from crl_jax.experience import load_state
from crl_jax.training.metrics import is_clock_metric, read_metrics
from crl_jax.rl.rollout import RolloutEngine
from crl_jax.training.processes import launch_local
from models.distributed import ProcessShare
from tests.training.test_runs import SMALL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "experiments", "run.py")
# Two RL steps of 4 episodes (2 tasks x 2, one guided), each process playing
# 2 of them; step 2 reads the entries step 1 consolidated, the extractor
# trains from step 2 on; evaluated and checkpointed at the end. The driver's
# extractor always adds an entry (tests/training/sync_driver.py).
FLAGS = [f"--{kv}" for kv in SMALL] + [
    "--experience.sync=true", "--experience.extractor_updates_per_step=2",
    "--experience.bank.train_batch_size=1"]


def _env(devices: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COORDINATOR", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"))}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["JAX_PLATFORMS"] = "cpu"
    return env


def _run(out, *extra, devices=1, timeout=600):
    cmd = [sys.executable, "-m", "tests.training.sync_driver", "--config=alfworld_cpu",
           f"--out_dir={out}", *FLAGS, *extra]
    proc = subprocess.run(cmd, env=_env(devices), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    return proc


def _final_params(out, tree: str) -> dict[str, np.ndarray]:
    """A tree of the run's last checkpoint (actor_params, extractor_params),
    as NumPy arrays whatever mesh it was saved from."""
    path = os.path.join(_last_step(out), f"tree_{tree}")
    with ocp.PyTreeCheckpointer() as ckptr:
        meta = ckptr.metadata(path).item_metadata.tree
        args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray),
                            ocp.checkpoint_utils.construct_restore_args(meta),
                            is_leaf=lambda x: isinstance(x, ocp.RestoreArgs))
        restored = ckptr.restore(path, args=ocp.args.PyTreeRestore(restore_args=args))
    flat, _ = jax.tree_util.tree_flatten_with_path(restored)
    return {jax.tree_util.keystr(p): np.asarray(v) for p, v in flat}


def _last_step(out) -> str:
    ckpts = os.path.join(out, "checkpoints")
    return os.path.join(ckpts, str(max(int(d) for d in os.listdir(ckpts) if d.isdigit())))


def _bank(out) -> list:
    state = load_state(os.path.join(_last_step(out), "files", "bank"), 256)
    stats = dict(state.stats)
    return [(e.id, e.task_key, e.text, stats[e.id].retrieval_count, stats[e.id].train_count)
            for e in state.entries]


def _no_clock(rows):
    return [{k: v for k, v in r.items() if not is_clock_metric(k)} for r in rows]


# The longest test by far (two training processes and a third to compare,
# each compiling its own programs: minutes on 2 cores with a cold cache); the
# models' two-process check (tests/models/test_multihost.py) and the other
# multi-process tests here run by default.
@pytest.mark.slow
def test_two_processes_match_one_process_on_the_same_mesh(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    ref = _run(one, devices=2)
    assert ref.returncode == 0, ref.stderr[-3000:]
    got = _run(two, "--cpu_processes=2")
    assert got.returncode == 0, got.stderr[-3000:]
    want_rows = _no_clock(read_metrics(str(one / "metrics.jsonl")))
    got_rows = _no_clock(read_metrics(str(two / "metrics.jsonl")))
    assert [r["step"] for r in got_rows] == [0, 1, 2]
    last = got_rows[-1]
    assert last["train/episodes"] == 4 and last["manager/episodes"] == 2 * 4
    assert last["bank/size"] >= 1 and last["extractor/updates"] >= 1  # the pipeline ran
    assert got_rows == want_rows
    assert _bank(two) == _bank(one)
    # process 0 wrote the run's files; process 1 only its own log
    assert (two / "log.txt").exists() and (two / "log.p1.txt").exists()
    for tree in ("actor_params", "extractor_params"):
        a, b = _final_params(one, tree), _final_params(two, tree)
        assert a.keys() == b.keys() and a
        for k in a:
            np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-7, err_msg=f"{tree}{k}")


# Process 1 fails at once; process 0 ignores SIGTERM and would sleep for ten
# minutes: the launcher must stop it (SIGKILL after the grace period).
MEMBERS = """
import os, signal, sys, time
if os.environ["JAX_PROCESS_ID"] == "1":
    sys.exit(3)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(600)
"""


def test_a_failed_process_stops_the_others_with_a_clear_error(capsys):
    start = time.monotonic()
    code = launch_local([sys.executable, "-c", MEMBERS], 2, grace_s=1.0, poll_s=0.1)
    assert code == 3
    assert time.monotonic() - start < 60  # nothing waits for the ten-minute sleep
    assert "process 1 of 2 exited with status 3" in capsys.readouterr().err


def _children(pid: int) -> dict[int, int]:
    """The launcher's processes: pid -> JAX process id."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    found = {}
    for child in map(int, out.split()):
        with open(f"/proc/{child}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        found[child] = int(env[b"JAX_PROCESS_ID"])
    return found


@pytest.mark.slow
def test_a_killed_process_stops_the_job_and_all_resume_to_the_same_run(tmp_path):
    """SIGKILL one of 2 processes after the first checkpoint: the job stops
    with an error naming it; --resume on 2 processes then ends where an
    uninterrupted single-process run on the same mesh ends."""
    one, two = tmp_path / "one", tmp_path / "two"
    ckpt = ["--train.checkpoint_every=1"]
    ref = _run(one, *ckpt, devices=2)
    assert ref.returncode == 0, ref.stderr[-3000:]
    cmd = [sys.executable, "-m", "tests.training.sync_driver", "--config=alfworld_cpu",
           f"--out_dir={two}", *FLAGS, *ckpt, "--cpu_processes=2"]
    job = subprocess.Popen(cmd, env=_env(1), cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        while not (two / "checkpoints" / "1").exists():
            assert job.poll() is None, job.stderr.read()[-3000:]
            time.sleep(0.2)
        victim = next(pid for pid, index in _children(job.pid).items() if index == 1)
        os.kill(victim, signal.SIGKILL)
        _, err = job.communicate(timeout=120)  # bounded: the launcher stops the other
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0 and "process 1 of 2 exited" in err
    resumed = _run(two, *ckpt, "--cpu_processes=2", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (_no_clock(read_metrics(str(two / "metrics.jsonl")))
            == _no_clock(read_metrics(str(one / "metrics.jsonl"))))
    assert _bank(two) == _bank(one)
    for tree in ("actor_params", "extractor_params"):
        a, b = _final_params(one, tree), _final_params(two, tree)
        for k in a:
            np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-7, err_msg=f"{tree}{k}")


def test_a_run_resumes_only_with_the_process_count_that_saved_it():
    from crl_jax.training.loop import check_process_count
    check_process_count(2, 2)
    with pytest.raises(RuntimeError, match=r"checkpointed by 2 .* resumed by 1.*--cpu_processes=2"):
        check_process_count(2, 1)


class TwoProcesses(ProcessShare):
    """Process ``index`` of 2, whose gather returns the other process's part
    as given (what a real exchange would bring)."""

    def __init__(self, index, other):
        super().__init__(index, 2)
        object.__setattr__(self, "other", other)

    def gather(self, obj):
        return [obj, self.other] if self.index == 0 else [self.other, obj]


def test_search_and_ask_asks_every_process_queries_in_order_and_keeps_its_own():
    calls = []

    def ask(queries, keys):
        calls.append((list(queries), list(keys)))
        return [(f"advice for {q}", f"key {q}") for q in queries]

    engine = RolloutEngine.__new__(RolloutEngine)
    engine.share = TwoProcesses(1, [("q0", "a"), ("q1", "b")])
    got = engine._ask(ask, [3, 5], ["q2", "q3"], ["c", "d"])
    assert calls == [(["q0", "q1", "q2", "q3"], ["a", "b", "c", "d"])]
    assert got == {3: ("advice for q2", "key q2"), 5: ("advice for q3", "key q3")}
    engine.share = TwoProcesses(0, [("q9", "z")])  # process 0, with no query of its own
    assert engine._ask(ask, [], [], []) == {}
    assert calls[-1] == (["q9"], ["z"])  # it still asks the other's, like every replica
