"""Multi-host set-up and the few collectives the host loop needs.

``initialize_distributed`` joins a multi-process job: one call before any
other JAX use on every process. On GPU/TPU clusters
``jax.distributed.initialize()`` discovers everything from the environment
(SLURM, TPU metadata, or JAX_COORDINATOR_ADDRESS etc.). On CPU (tests,
laptops) collectives across processes need gloo, which it switches on.

Then: ``host_value`` reads arrays sharded over several processes,
``allgather_objects`` exchanges host records, ``ProcessShare`` says which
items of a batch this process handles, ``sync_processes`` and
``main_process_first`` order file work between processes. With one
process every one of them is free.
"""
from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import jax
import numpy as np


def initialize_distributed(coordinator_address: str | None = None,
                           num_processes: int | None = None,
                           process_id: int | None = None, *, cpu: bool = False) -> None:
    """Joins this process to a multi-process JAX job.

    Arguments left None are discovered by JAX from the cluster environment.
    ``cpu=True`` selects gloo collectives for CPU-only jobs (set before the
    backend starts).
    """
    if cpu:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id)


def global_batch_from_local(local: "jax.Array | object", mesh, sharding) -> jax.Array:
    """Assembles a global [batch, ...] array from each process's local rows."""
    import numpy as np
    from jax.experimental import multihost_utils

    return multihost_utils.host_local_array_to_global_array(np.asarray(local), mesh,
                                                             sharding.spec)


def host_value(tree):
    """The whole value of every array in ``tree`` on this host, as NumPy.
    Arrays sharded over several processes' devices are gathered from all of
    them in one collective (every process must ask at the same point of the
    program); the others are read locally."""
    leaves, treedef = jax.tree.flatten(tree)
    remote = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)
              and not (x.is_fully_addressable or x.is_fully_replicated)]
    out = [np.asarray(x) if i not in remote else None for i, x in enumerate(leaves)]
    if remote:
        from jax.experimental import multihost_utils

        gathered = multihost_utils.process_allgather([leaves[i] for i in remote], tiled=True)
        for i, x in zip(remote, gathered):
            out[i] = np.asarray(x)
    return jax.tree.unflatten(treedef, out)


def allgather_objects(obj: Any) -> list:
    """Every process's ``obj``, in process order (a collective; with one
    process, ``[obj]`` without copying). Objects travel pickled, so they
    must be picklable; meant for host-side records (prompts, episodes), not
    for arrays that could be sharded instead."""
    if jax.process_count() == 1:
        return [obj]
    from jax.experimental import multihost_utils

    data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.array([data.size], np.int64)))
    sizes = sizes.reshape(-1)
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[:data.size] = data
    rows = np.asarray(multihost_utils.process_allgather(padded))
    return [pickle.loads(rows[i, :int(n)].tobytes()) for i, n in enumerate(sizes)]


@dataclasses.dataclass(frozen=True)
class ProcessShare:
    """This process's place in the job: ``index`` of ``count`` processes."""

    index: int = 0
    count: int = 1

    @classmethod
    def current(cls) -> "ProcessShare":
        return cls(jax.process_index(), jax.process_count())

    @property
    def is_main(self) -> bool:
        """Process 0: the one that writes files and the console."""
        return self.index == 0

    def owned(self, n: int) -> range:
        """The indices of ``n`` items this process handles: contiguous blocks
        in process order, the first ``n % count`` processes one item more."""
        base, extra = divmod(n, self.count)
        start = self.index * base + min(self.index, extra)
        return range(start, start + base + (self.index < extra))

    def gather(self, obj: Any) -> list:
        """Every process's ``obj`` in process order (one process: ``[obj]``).
        A collective: every process calls it at the same point."""
        if self.count == 1:
            return [obj]
        return allgather_objects(obj)

    def agree(self, value: Any, what: str) -> Any:
        """``value``, after checking that every process has the same one
        (host state that must not diverge: a step counter, a checkpoint
        step); a mismatch raises with every process's value."""
        values = self.gather(value)
        if any(v != values[0] for v in values[1:]):
            raise RuntimeError(f"the processes disagree on {what}: {values} (process order)")
        return value


def main_process_first(make, name: str):
    """``make()`` on process 0, then on the others once it is done (a
    barrier named ``name``): for work that writes files the others then
    read (a tokenizer fitted into the run directory). One process: ``make()``."""
    if jax.process_count() == 1:
        return make()
    out = make() if jax.process_index() == 0 else None
    sync_processes(name)
    return out if jax.process_index() == 0 else make()


def sync_processes(name: str) -> None:
    """Every process waits here until all have come (one process: nothing)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(f"crl_jax:{name}")
