"""Does a preset fit its devices? A dry run with abstract parameters.

``run.py --config=alfworld --dry_run --devices=16`` (the run command) builds
the actor and the extractor as shapes only (no checkpoint is read: a
checkpoint's config.json when it exists, else the published architecture of
a checkpoint this project's presets name), lays them out on a fake mesh of
``--devices`` CPU devices with the preset's sharding rules, and compiles the
programs a run executes on them at the preset's sizes: the micro-batch
gradient step and the optimiser update of each model. Per device it reports

    parameters      the sharded weights (shard shapes of the rules)
    optimiser       AdamW's moments, sharded like the parameters
    gradients       the gradient accumulator kept between micro-batches
                    (the compiled micro-step's output)
    activations     the micro-step's working memory (the compiled program's
                    temporary buffers, remat included)
    update          the optimiser update's temporary buffers
    KV cache        the sampler's cache for a whole rollout batch (actor:
                    tasks x K episodes; extractor: one consolidation batch),
                    as the sampler places it

and a verdict against a device's memory. The numbers come from XLA's CPU
compiler: it partitions the program as a GPU or TPU compiler would, but fuses
and schedules differently, so read them as an estimate (the test checks them
against real arrays and real compiles of a small model on CPU).
"""
from __future__ import annotations

import dataclasses
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from crl_jax.rl.learner import Learner
from crl_jax.training.config import ModelSpec, RunConfig
from models.cache_rows import continued_cache_slots
from models.config import DecoderConfig, config_from_hf, load_hf_config
from models.decoder import Decoder
from models.sharding import (MeshConfig, batch_sharding, make_mesh, optimizer_shardings,
                             state_shardings)

# Device memory in GB (10^9 bytes), as sold.
DEVICE_GB = {"h100": 80, "h200": 141, "v5p": 95, "a100": 80}

# The published config.json fields (architecture only) of the checkpoints
# the paper presets name, so a dry run needs no download.
KNOWN_ARCHITECTURES = {
    "Qwen2.5-7B-Instruct": dict(
        model_type="qwen2", vocab_size=152064, hidden_size=3584, intermediate_size=18944,
        num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
        max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=False),
    "Qwen3-4B-Thinking-2507": dict(
        model_type="qwen3", vocab_size=151936, hidden_size=2560, intermediate_size=9728,
        num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        max_position_embeddings=262144, rope_theta=5e6, tie_word_embeddings=True),
}
KNOWN_ARCHITECTURES["Qwen3-4B-Instruct-2507"] = KNOWN_ARCHITECTURES["Qwen3-4B-Thinking-2507"]


def decoder_config(spec: ModelSpec, vocab_size: int) -> DecoderConfig:
    """The architecture of a role, with the spec's dtypes, scan and remat."""
    dtypes = dict(dtype=spec.dtype, param_dtype=spec.param_dtype, scan_layers=spec.scan_layers,
                  remat=spec.remat, attention_chunk=spec.attention_chunk)
    if not spec.checkpoint:
        return DecoderConfig(
            family=spec.family, vocab_size=vocab_size, hidden_size=spec.hidden_size,
            intermediate_size=spec.intermediate_size, num_layers=spec.num_layers,
            num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim,
            tie_embeddings=True, qk_norm=spec.family == "qwen3", qkv_bias=spec.family == "qwen2",
            **dtypes)
    if os.path.exists(os.path.join(spec.checkpoint, "config.json")):
        return load_hf_config(spec.checkpoint, **dtypes)
    name = os.path.basename(spec.checkpoint.rstrip("/"))
    if name not in KNOWN_ARCHITECTURES:
        raise ValueError(f"{spec.checkpoint!r} has no config.json here and is not a known "
                         f"architecture ({', '.join(sorted(KNOWN_ARCHITECTURES))})")
    return config_from_hf(KNOWN_ARCHITECTURES[name], **dtypes)


@dataclasses.dataclass(frozen=True)
class RoleMemory:
    """Bytes per device of one role (the largest shard where shards differ)."""

    role: str
    devices: int
    mesh: dict
    num_params: int
    parameters: int
    optimiser: int
    gradients: int
    activations: int
    update: int
    kv_cache: int
    kv_cache_sharded: bool
    micro_batch: tuple[int, int]  # (sequences, tokens each)
    rollout_batch: tuple[int, int]  # (sequences, cache slots)
    device_ids: tuple[int, ...] = ()
    cache_kind: str = ""  # how the rollout's cache slots were sized, for the table

    @property
    def total(self) -> int:
        # The update runs after the last micro-step: its buffers and the
        # micro-step's are never live together; sampling runs apart from both.
        training = self.parameters + self.optimiser + self.gradients + max(self.activations,
                                                                            self.update)
        return max(training, self.parameters + self.kv_cache)


def _shard_bytes(shape, dtype, sharding) -> int:
    return math.prod(sharding.shard_shape(tuple(shape))) * np.dtype(dtype).itemsize


def tree_shard_bytes(tree, shardings) -> int:
    """Bytes of the largest shard set of ``tree`` (abstract values) on one device."""
    leaves = jax.tree.leaves(tree)
    shards = jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))
    return sum(_shard_bytes(x.shape, x.dtype, s) for x, s in zip(leaves, shards))


def abstract_learner(cfg: DecoderConfig, optim, loss, mesh) -> tuple[Learner, object, object]:
    """A Learner whose parameters and optimiser state are shapes with their
    shardings (jax.ShapeDtypeStruct): its jitted steps lower, nothing is allocated."""
    model = nnx.eval_shape(lambda: Decoder(cfg, nnx.Rngs(0)))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    shardings = state_shardings(params, mesh)
    params = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                          params, shardings)
    learner = Learner.__new__(Learner)
    learner.graphdef, learner.rest, learner.mesh, learner.loss_config = graphdef, rest, mesh, loss
    learner.trim_padding, learner.donate = True, (0, 1)
    learner.params, learner.param_shardings = params, shardings
    learner.optim = optim
    # The same optimiser and steps as Learner.reset_optimizer, without initialising state.
    import optax
    chain = [optax.clip_by_global_norm(optim.grad_clip)] if optim.grad_clip > 0 else []
    learner.tx = optax.chain(*chain, optax.adamw(optim.lr, optim.b1, optim.b2, optim.eps,
                                                 weight_decay=optim.weight_decay))
    opt_shardings = optimizer_shardings(learner.tx, params, mesh)
    opt_state = jax.eval_shape(learner.tx.init, params)
    opt_state = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                             opt_state, opt_shardings)
    learner.opt_state = opt_state
    return learner, shardings, opt_shardings


def micro_batch_arrays(mesh, rows: int, width: int) -> dict:
    """Abstract arrays of one packed micro-batch (crl_jax/rl/batch.py PackedBatch)."""
    sharding = batch_sharding(mesh, 2, batch_size=rows)
    kinds = dict(tokens=jnp.int32, input_mask=jnp.bool_, targets=jnp.int32, loss_mask=jnp.float32,
                 old_logprobs=jnp.float32, advantages=jnp.float32)
    return {k: jax.ShapeDtypeStruct((rows, width), d, sharding=sharding) for k, d in kinds.items()}


def estimate_role(role: str, cfg: DecoderConfig, optim, loss, devices, mesh_config: MeshConfig,
                  width: int, rollout_rows: int, cache_slots: int) -> RoleMemory:
    """Compiles the role's gradient micro-step and update on ``devices`` and
    reads their memory; adds the sampler's KV cache for ``rollout_rows``."""
    mesh = make_mesh(mesh_config, devices)
    learner, shardings, opt_shardings = abstract_learner(cfg, optim, loss, mesh)
    rows = optim.micro_batch
    kind = "policy" if loss is not None else "sft"
    grads_step = jax.jit(learner._micro_grads, static_argnums=(0, 3))
    micro = grads_step.lower(kind, learner.params, micro_batch_arrays(mesh, rows, width),
                             1.0).compile().memory_analysis()
    grads_out = jax.eval_shape(grads_step, kind, learner.params,
                               micro_batch_arrays(mesh, rows, width), 1.0)[0]
    apply = jax.jit(learner._apply_grads, donate_argnums=(0, 1))
    update = apply.lower(learner.params, learner.opt_state, grads_out).compile().memory_analysis()
    kv = kv_cache_bytes(cfg, rollout_rows, cache_slots, mesh)
    return RoleMemory(
        role=role, devices=len(devices), mesh=dict(mesh.shape),
        num_params=sum(math.prod(x.shape) for x in jax.tree.leaves(learner.params)),
        parameters=tree_shard_bytes(learner.params, shardings),
        optimiser=tree_shard_bytes(learner.opt_state, opt_shardings),
        gradients=int(micro.output_size_in_bytes), activations=int(micro.temp_size_in_bytes),
        update=int(update.temp_size_in_bytes), kv_cache=kv[0], kv_cache_sharded=kv[1],
        micro_batch=(rows, width), rollout_batch=(rollout_rows, cache_slots),
        device_ids=tuple(d.id for d in devices))


def kv_cache_bytes(cfg: DecoderConfig, rows: int, slots: int, mesh) -> tuple[int, bool]:
    """Bytes of the sampler's KV cache on its fullest device, and whether it
    is sharded (models/sampler.py places it with the rules' batch axis)."""
    from models.sampler import batch_bucket, cache_sharding
    # The sampler pads a batch to its bucket (134 rows -> 136), which then
    # divides over the devices.
    shape = (cfg.num_layers, batch_bucket(rows), cfg.num_kv_heads, slots, cfg.head_dim)
    sharding = cache_sharding(mesh, shape)
    per = _shard_bytes(shape, cfg.jnp_dtype, sharding) if sharding is not None else (
        math.prod(shape) * np.dtype(cfg.jnp_dtype).itemsize)
    # Keys hold the values' bytes with the last two axes swapped (KVCache).
    return 2 * per, sharding is not None and not sharding.is_fully_replicated


def estimate(cfg: RunConfig) -> list[RoleMemory]:
    """Both roles of ``cfg`` on this process's (fake) devices."""
    from crl_jax.training.setup import role_devices

    r, x = cfg.rollout, cfg.experience
    vocab = cfg.warm_start.vocab_size
    width = r.max_prompt_tokens + r.max_new_tokens  # a training sample: prompt + answer
    # Rollouts play one environment at a time (training and evaluation): the
    # sampler's largest batch is one environment's episodes, not the mixture's.
    episodes = max(cfg.train.tasks_per_step * cfg.train.group_size, cfg.env.num_eval_tasks)
    slots, kind = width, "prompt + answer"
    if r.conversation and r.continue_cache:
        # The continued conversation's cache (models/cache_rows.py): the
        # limit, one block's padding and the answer, in the sampler's buckets.
        slots = continued_cache_slots(r.max_prompt_tokens, r.max_new_tokens)
        kind = "continued conversation: limit + a turn's padding + answer"
    actor = estimate_role("actor", decoder_config(cfg.actor, vocab), cfg.actor_optim,
                          cfg.actor_loss, role_devices(cfg.actor.devices), _mesh(cfg.actor),
                          width, episodes, slots)
    out = [dataclasses.replace(actor, cache_kind=kind)]
    if x.has_extractor:
        ext_width = x.extractor_max_prompt_tokens + x.extractor_max_new_tokens
        out.append(estimate_role("extractor", decoder_config(cfg.extractor, vocab),
                                 cfg.extractor_optim, cfg.extractor_loss,
                                 role_devices(cfg.extractor.devices), _mesh(cfg.extractor),
                                 ext_width, max(1, x.bank.train_batch_size), ext_width))
    return out


def _mesh(spec: ModelSpec) -> MeshConfig:
    return MeshConfig(spec.mesh_data, spec.mesh_fsdp, spec.mesh_tp)


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"


def report(roles: list[RoleMemory], device: str) -> tuple[str, bool]:
    """A table of per-device GB and the verdict for ``device``."""
    if device not in DEVICE_GB:
        raise ValueError(f"device {device!r}; valid: {', '.join(DEVICE_GB)}")
    cap = DEVICE_GB[device] * 1e9
    gb = lambda b: f"{b / 1e9:7.2f}"  # noqa: E731
    lines = [f"{'role':<10} {'devices':>7} {'params':>7} | GB per device: {'params':>7} "
             f"{'optim':>7} {'grads':>7} {'activ.':>7} {'update':>7} {'KV':>7} {'total':>7}"]
    fits = True
    for m in roles:
        lines.append(f"{m.role:<10} {m.devices:>7} {_count(m.num_params):>7} |{'':15}"
                     f"{gb(m.parameters)} {gb(m.optimiser)} {gb(m.gradients)} "
                     f"{gb(m.activations)} {gb(m.update)} {gb(m.kv_cache)} {gb(m.total)}")
        fits = fits and m.total <= cap
    for m in roles:
        lines.append(f"  {m.role}: mesh {m.mesh}, micro-batch {m.micro_batch[0]} x "
                     f"{m.micro_batch[1]} tokens, rollout batch {m.rollout_batch[0]} x "
                     f"{m.rollout_batch[1]} cache slots "
                     f"({m.cache_kind + ', ' if m.cache_kind else ''}"
                     f"{'sharded' if m.kv_cache_sharded else 'not sharded'}); "
                     f"{'fits' if m.total <= cap else 'DOES NOT FIT'} in {device} "
                     f"({DEVICE_GB[device]} GB): {m.total / cap:.0%}")
        split = m.mesh.get("data", 1) * m.mesh.get("fsdp", 1)
        if m.micro_batch[0] % split:
            lines.append(f"    note: {m.micro_batch[0]} rows a micro-batch do not divide over "
                         f"the {split} data-parallel devices, so every device computes all "
                         f"of them; make {m.role}_optim.micro_batch a multiple of {split} "
                         f"or give the {m.role} fewer devices")
    shared = set(roles[0].device_ids) & set(roles[1].device_ids) if len(roles) > 1 else set()
    if shared:
        # Roles on the same devices hold their memory together: the asynchronous
        # pipeline samples consolidations while the actor trains, so both peaks
        # may coincide (an upper bound; the synchronous one takes turns).
        both = roles[0].total + roles[1].total
        fits = fits and both <= cap
        lines.append(f"  actor and extractor share {len(shared)} device"
                     f"{'s' if len(shared) != 1 else ''}: both peaks at once "
                     f"{both / 1e9:.2f} GB per device, {both / cap:.0%} of {device}: "
                     f"{'fit' if both <= cap else 'DO NOT FIT'}")
    return "\n".join(lines), fits
