"""Multi-host set-up: one call before any other JAX use on every host.

On GPU/TPU clusters ``jax.distributed.initialize()`` discovers everything from
the environment (SLURM, TPU metadata, or JAX_COORDINATOR_ADDRESS etc.). On CPU
(for tests and laptops) collectives across processes need gloo, which this
helper switches on.
"""
from __future__ import annotations

import jax


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
