"""Two local processes form one JAX job (gloo CPU collectives) and compute
the same loss as a single process on the same global batch."""
import os
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

from models.config import tiny_config
from models.decoder import init_decoder

WORKER = os.path.join(os.path.dirname(__file__), "multihost_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_match_single_process(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    outs = [tmp_path / f"p{i}.npy" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(i), str(outs[i])], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(2)]
    for p in procs:
        try:
            log, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        assert p.returncode == 0, log.decode()[-3000:]
    a, b = np.load(outs[0]), np.load(outs[1])
    np.testing.assert_allclose(a, b, rtol=1e-6)

    model = init_decoder(tiny_config("qwen3"), seed=0)
    tokens = np.random.default_rng(0).integers(0, 128, size=(8, 16)).astype(np.int32)
    logits, _ = model(jnp.asarray(tokens))
    want = np.concatenate([[float(jnp.mean(jax.nn.logsumexp(logits, -1)))],
                           np.asarray(logits.sum(-1).mean(-1))])
    np.testing.assert_allclose(a, want, rtol=2e-5, atol=2e-5)
