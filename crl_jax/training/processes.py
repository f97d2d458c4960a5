"""The trainer as a multi-controller JAX program: one process per host (or
several local CPU processes), every process running the same host loop.

The design (BUILD.md, "Multi-host (GPU clusters, TPU pods) and several
processes"): every process keeps the whole host
state (the generator that picks tasks, the episodes of a step, the
experience bank) and issues the same device programs in the same order;
the models and their batches are global arrays over all processes' devices.
What each process does alone is its share of the environments: episode i of
a batch is reset and stepped only by the process that owns it
(`ProcessShare.owned`), and the prompts, retrieval queries and finished
episodes are exchanged with `ProcessShare.gather` at fixed points of a
rollout. Files (metrics, logs, the bank, the warm-start cache) are written by
process 0 only; checkpoints of device arrays are written by all together.

    share = ProcessShare.current()       # (index, count) of this process
    mine = share.owned(len(episodes))    # the indices this process plays
    everyone = share.gather(my_records)  # every process's records, in order
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from models.distributed import ProcessShare, initialize_distributed

# What a local launch (run.py --cpu_processes) tells each process it starts.
ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"
ENV_CPU_COLLECTIVES = "CRL_JAX_CPU_COLLECTIVES"  # "1": gloo collectives between CPU processes


class NoClusterError(RuntimeError):
    """--distributed was asked for, and this process is in no job."""


# What JAX's cluster discovery reads (jax._src.clusters), for the message
# when it finds nothing: scheduler or platform -> a variable it sets.
CLUSTER_MARKERS = {"SLURM (srun)": "SLURM_JOB_ID", "Open MPI (mpirun)": "OMPI_MCA_orte_hnp_uri",
                   "a TPU pod slice on GKE": "TPU_WORKER_HOSTNAMES",
                   "Kubernetes (a JobSet)": "KUBERNETES_SERVICE_HOST"}


def _no_cluster_message() -> str:
    looked = ", ".join(f"{where}: ${var}" for where, var in CLUSTER_MARKERS.items())
    return (f"--distributed: this process is in no multi-process job. Set "
            f"{ENV_COORDINATOR} (host:port of process 0), {ENV_NUM_PROCESSES} and "
            f"{ENV_PROCESS_ID} on every host, or start the command under a scheduler JAX "
            f"discovers (looked for {looked}; a Cloud TPU VM's metadata server is asked on "
            "TPU hosts). On one machine, --cpu_processes=N starts a CPU job; without "
            "--distributed the run uses this host alone. BUILD.md \"Multi-host (GPU clusters, "
            "TPU pods) and several processes\".")


def initialize_from_environment() -> ProcessShare:
    """Joins the multi-process job this process was started in, if any: from
    JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID when set
    (a local launch sets them; CRL_JAX_CPU_COLLECTIVES=1 selects gloo for CPU
    processes), else from what jax.distributed discovers (SLURM, TPU pod
    metadata). Call before any other JAX use; returns this process's share."""
    address = os.environ.get(ENV_COORDINATOR)
    count = os.environ.get(ENV_NUM_PROCESSES)
    index = os.environ.get(ENV_PROCESS_ID)
    given = [address, count, index]
    if any(v is not None for v in given) and not all(v is not None for v in given):
        raise NoClusterError(f"set all of {ENV_COORDINATOR}, {ENV_NUM_PROCESSES} and "
                         f"{ENV_PROCESS_ID}, or none (cluster discovery); got {given}")
    try:
        initialize_distributed(address, int(count) if count else None,
                               int(index) if index else None,
                               cpu=os.environ.get(ENV_CPU_COLLECTIVES) == "1")
    except ValueError as err:  # JAX's discovery found no cluster: "coordinator_address ..."
        if address is None and "coordinator_address" in str(err):
            raise NoClusterError(_no_cluster_message()) from None
        raise
    return ProcessShare.current()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def launch_local(command: list[str], processes: int, grace_s: float = 10.0,
                 poll_s: float = 0.5) -> int:
    """Runs ``command`` (a run.py command line) as ``processes`` local CPU
    processes of one JAX job (gloo collectives) and waits for them. Process
    0 writes to this console; the others' output goes to their logs (their
    warnings and errors to stderr). When one process fails, the others are
    stopped (SIGTERM, then SIGKILL after ``grace_s``): a job that lost a
    member never hangs. Returns 0, or the first failing process's exit status."""
    if processes < 2:
        raise ValueError(f"--cpu_processes={processes}: give 2 or more (1 is a plain run)")
    address = f"localhost:{free_port()}"
    procs = []
    for index in range(processes):
        env = {**os.environ, ENV_COORDINATOR: address, ENV_NUM_PROCESSES: str(processes),
               ENV_PROCESS_ID: str(index), ENV_CPU_COLLECTIVES: "1", "JAX_PLATFORMS": "cpu"}
        procs.append(subprocess.Popen(command, env=env,
                                      stdout=None if index == 0 else subprocess.DEVNULL))
    failed = None
    try:
        while failed is None and any(p.poll() is None for p in procs):
            failed = next((i for i, p in enumerate(procs) if p.poll() not in (None, 0)), None)
            if failed is None:
                time.sleep(poll_s)
        if failed is None:
            failed = next((i for i, p in enumerate(procs) if p.returncode), None)
    finally:
        if failed is not None or any(p.poll() is None for p in procs):
            _stop(procs, grace_s)
    if failed is None:
        return 0
    code = procs[failed].returncode
    print(f"error: process {failed} of {processes} exited with status {code}; the others "
          "were stopped. Resume with the same command and --resume.", file=sys.stderr)
    return code or 1


def _stop(procs: list, grace_s: float) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def unsupported(cfg) -> str | None:
    """What in ``cfg`` a multi-process run does not do yet, or None.
    Background threads that issue device programs at moments of their own
    (asynchronous consolidation and extractor training) would make the
    processes issue them in different orders."""
    x = cfg.experience
    if x.has_extractor and not x.sync:
        return ("experience.sync=false: the asynchronous experience pipeline runs in one "
                "process only; add --experience.sync=true")
    return None
