"""The dry run (crl_jax/training/dry_run.py) against the real thing: a small
model laid out on 4 fake CPU devices for real, its shards measured and its
training step compiled with real arrays, must give the dry run's numbers."""
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from crl_jax.rl.learner import Learner, OptimConfig
from crl_jax.training import dry_run
from kernels.policy_losses import PolicyLossConfig
from models.config import tiny_config
from models.decoder import init_decoder
from models.sampler import Sampler
from models.sampling_ops import SamplingConfig
from models.sharding import MeshConfig, batch_sharding, make_mesh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _per_device(tree) -> int:
    """Bytes of the fullest device's shards of real arrays."""
    used: dict = {}
    for leaf in jax.tree.leaves(tree):
        for shard in leaf.addressable_shards:
            used[shard.device] = used.get(shard.device, 0) + shard.data.nbytes
    return max(used.values())


def test_dry_run_numbers_match_a_real_small_model_on_four_devices():
    devices = jax.devices()[:4]
    cfg = tiny_config("qwen3", vocab_size=256, hidden_size=64, intermediate_size=128,
                      num_heads=4, num_kv_heads=4, head_dim=16)
    optim, loss = OptimConfig(lr=1e-3, micro_batch=4), PolicyLossConfig.split_grpo_paper()
    est = dry_run.estimate_role("actor", cfg, optim, loss, devices, MeshConfig(1, -1, 1),
                                width=64, rollout_rows=8, cache_slots=128)

    mesh = make_mesh(MeshConfig(1, -1, 1), devices)
    learner = Learner(init_decoder(cfg, seed=0, mesh=mesh), optim, loss, mesh=mesh)
    assert est.num_params == sum(int(np.prod(x.shape)) for x in jax.tree.leaves(learner.params))
    assert est.parameters == _per_device(learner.params)
    assert est.optimiser == _per_device(learner.opt_state)

    rng = np.random.default_rng(0)
    sharding = batch_sharding(mesh, 2, batch_size=4)
    arrays = dict(tokens=rng.integers(0, 256, (4, 64)).astype(np.int32),
                  input_mask=np.ones((4, 64), bool),
                  targets=rng.integers(0, 256, (4, 64)).astype(np.int32),
                  loss_mask=np.ones((4, 64), np.float32),
                  old_logprobs=np.full((4, 64), -5.0, np.float32),
                  advantages=np.ones((4, 64), np.float32))
    mb = {k: jax.device_put(v, sharding) for k, v in arrays.items()}
    real = learner._grads.lower("policy", learner.params, mb, 1.0).compile().memory_analysis()
    assert est.activations == real.temp_size_in_bytes
    assert est.gradients == real.output_size_in_bytes
    (grads, _, _), _ = learner._grads("policy", learner.params, mb, 1.0)
    # The gradient accumulator is sharded like the parameters (plus a few scalars).
    assert _per_device(grads) == est.parameters <= est.gradients < est.parameters + 4096

    sampler = Sampler(learner.model)
    result = sampler.generate([[1, 2, 3]] * 8, SamplingConfig(max_new_tokens=4, temperature=0.0))
    cache = result.state.cache
    assert (cache.rows, cache.slots) == (8, 128)  # the rows and slots the estimate was asked for
    assert est.kv_cache == _per_device(cache) and est.kv_cache_sharded
    assert _per_device(cache) * 4 == sum(a.nbytes for a in jax.tree.leaves(cache))  # a quarter per device


def test_known_architectures_have_the_published_sizes():
    from crl_jax.training.config import ModelSpec

    sizes = {"Qwen2.5-7B-Instruct": 7.62e9, "Qwen3-4B-Thinking-2507": 4.02e9}
    for name, want in sizes.items():
        cfg = dry_run.decoder_config(ModelSpec(checkpoint=f"/nowhere/{name}"), 0)
        mesh = make_mesh(MeshConfig(1, -1, 1), jax.devices()[:1])
        learner, _, _ = dry_run.abstract_learner(cfg, OptimConfig(), None, mesh)
        n = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(learner.params))
        assert n == pytest.approx(want, rel=0.005), name
    with pytest.raises(ValueError, match="not a known architecture"):
        dry_run.decoder_config(ModelSpec(checkpoint="/nowhere/Mystery-1B"), 0)
    with pytest.raises(ValueError, match="valid"):
        dry_run.report([], "tpu-v9")


def test_the_command_prints_a_verdict():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "run.py"),
                          "--config=alfworld_cpu", "--dry_run", "--devices=2",
                          "--experience.mode=none"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "actor " in out.stdout and "verdict: fits on 2 x h100" in out.stdout
    assert "extractor " not in out.stdout  # mode none trains no extractor
    assert "h100-hours for the whole run (actor 0)" in out.stdout  # cost_model's estimate


def _role(name, ids, gb):
    """A role whose peak (training) is ``gb`` GB a device."""
    return dry_run.RoleMemory(role=name, devices=len(ids), mesh={"fsdp": len(ids)}, num_params=1,
                              parameters=0, optimiser=0, gradients=0, activations=int(gb * 1e9),
                              update=0, kv_cache=0, kv_cache_sharded=True, micro_batch=(8, 8),
                              rollout_batch=(8, 8), device_ids=tuple(ids))


@pytest.mark.parametrize("actor_gb, extractor_gb, fits", [(50, 29, True), (50, 31, False)])
def test_roles_on_the_same_devices_must_fit_together(actor_gb, extractor_gb, fits):
    shared = [_role("actor", range(8), actor_gb), _role("extractor", range(8), extractor_gb)]
    table, verdict = dry_run.report(shared, "h100")
    assert verdict is fits
    assert f"share 8 devices: both peaks at once {actor_gb + extractor_gb:.2f} GB" in table
    apart = [_role("actor", range(4), actor_gb), _role("extractor", range(4, 8), extractor_gb)]
    table, verdict = dry_run.report(apart, "h100")
    assert verdict and "share" not in table  # each alone fits its own devices
