"""One process of the two-process test (run by test_multihost.py)."""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from models.config import tiny_config
from models.decoder import init_decoder
from models.distributed import global_batch_from_local, initialize_distributed
from models.sharding import MeshConfig, make_mesh, shard_state


def main(port: int, pid: int, out: str) -> None:
    initialize_distributed(f"localhost:{port}", 2, pid, cpu=True)
    assert jax.process_count() == 2 and len(jax.devices()) == 4
    mesh = make_mesh(MeshConfig(data=2, fsdp=2, tp=1))
    model = init_decoder(tiny_config("qwen3"), seed=0)
    graphdef, params = nnx.split(model)
    params = shard_state(params, mesh)
    tokens = np.random.default_rng(0).integers(0, 128, size=(8, 16)).astype(np.int32)
    local = tokens[pid * 4:(pid + 1) * 4]  # each host feeds its own rows
    batch = global_batch_from_local(local, mesh, NamedSharding(mesh, P(("data", "fsdp"))))

    @jax.jit
    def loss(params, tokens):
        logits, _ = nnx.merge(graphdef, params)(tokens)
        return jnp.mean(jax.nn.logsumexp(logits, -1)), logits.sum(-1).mean(-1)

    value, per_row = loss(params, batch)
    from jax.experimental import multihost_utils
    rows = multihost_utils.process_allgather(per_row, tiled=True)
    np.save(out, np.concatenate([[float(value)], np.asarray(rows)]))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
