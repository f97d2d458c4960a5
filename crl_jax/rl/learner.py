"""Training steps for one model (the actor or the extractor).

A Learner owns a decoder's parameters and optimizer state on its own mesh and
exposes three jitted steps on packed batches of token sequences:

- ``policy_step``: fused chunked log-probs + PPO-clip (actor, split-GRPO) or
  CISPO (extractor) from kernels/, micro-batched with exact (sum, count)
  aggregation: gradients of the loss *sums* are accumulated over micro-batches
  and divided once by the total count, so the update equals the full batch's.
- ``sft_step``: masked next-token cross-entropy (warm starts, self-distillation).
- ``logprobs``: per-token log-probs of the current parameters (no gradient).

Old log-probs default to the sampler's (the behaviour policy). With one
update per batch and the same parameters the ratio is 1 up to numerics; a
truncated importance weight min(exp(lp_train - lp_sampler), C) can correct
sampler/trainer mismatch (``tis_cap``).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from crl_jax.rl.batch import PackedBatch, micro_batch_plan
from kernels.fused_loss import fused_policy_loss
from kernels.logprobs import token_logprobs
from kernels.policy_losses import PolicyLossConfig
from models.decoder import Decoder
from models.distributed import host_value
from models.sharding import (activation_sharding, batch_sharding, init_optimizer, make_mesh,
                             shard_state)


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    lr: float = 1e-6
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    b1: float = 0.9
    """AdamW first-moment decay."""
    b2: float = 0.999
    """AdamW second-moment decay."""
    eps: float = 1e-8
    """AdamW denominator epsilon."""
    grad_clip: float = 1.0  # global-norm clip; 0 disables
    micro_batch: int = 8  # sequences per micro-batch
    temperature: float = 1.0  # sampling temperature the log-probs are taken at
    tis_cap: float = 0.0  # truncated importance weight cap; 0 disables

    def __post_init__(self):
        if self.lr <= 0 or self.micro_batch < 1 or self.temperature <= 0:
            raise ValueError(f"bad optimiser config {self}: lr, micro_batch, temperature must be > 0")


class Learner:
    """Parameters + optimizer of one decoder, with jitted training steps."""

    def __init__(self, model: Decoder, optim: OptimConfig, loss: PolicyLossConfig | None = None,
                 mesh=None, donate: bool = True, trim_padding: bool = True):
        """``donate=False`` keeps the previous parameters alive through an update:
        needed when another thread samples from them meanwhile (the extractor).
        ``trim_padding``: updates sort rows by length and cut each micro-batch
        to its own width (see ``micro_batch_plan``); False runs every
        micro-batch at the batch's full width (the reference it must match)."""
        self.trim_padding = trim_padding
        self.mesh = mesh if mesh is not None else make_mesh(devices=jax.devices()[:1])
        self.graphdef, params, self.rest = nnx.split(model, nnx.Param, ...)
        self.params = shard_state(params, self.mesh)
        self.param_shardings = jax.tree.map(lambda p: p.sharding, self.params)
        if donate:  # own the buffers: donating them must not delete the caller's model
            self.params = jax.tree.map(jnp.copy, self.params)
        self.loss_config = loss
        self.donate = (0, 1) if donate else ()
        self.reset_optimizer(optim)
        self._lp = jax.jit(self._logprobs)

    def reset_optimizer(self, optim: OptimConfig, lr_schedule=None) -> None:
        """A fresh optimizer (new moments) with these settings; steps recompile.
        ``lr_schedule`` (an optax schedule: update count -> rate) replaces
        ``optim.lr`` when given."""
        self.optim = optim
        chain = [optax.clip_by_global_norm(optim.grad_clip)] if optim.grad_clip > 0 else []
        lr = optim.lr if lr_schedule is None else lr_schedule
        self.tx = optax.chain(*chain, optax.adamw(lr, optim.b1, optim.b2, optim.eps,
                                                  weight_decay=optim.weight_decay))
        self.opt_state = init_optimizer(self.tx, self.params, self.mesh)
        # One compiled program per micro-batch shape ([micro_batch, width], a
        # few widths: micro_batch_plan), not per batch size: the number of
        # micro-batches changes from step to step
        # (episodes differ in length), and a scan over them would recompile
        # each time. Gradients are summed across calls, then applied once.
        self._grads = jax.jit(self._micro_grads, static_argnums=(0, 3))
        self._accumulate = jax.jit(lambda acc, new: jax.tree.map(jnp.add, acc, new),
                                   donate_argnums=(0,))
        self._apply = jax.jit(self._apply_grads, donate_argnums=self.donate)

    @property
    def model(self) -> Decoder:
        return nnx.merge(self.graphdef, self.params, self.rest)

    def _hidden(self, params, tokens, input_mask):
        model = nnx.merge(self.graphdef, params, self.rest)
        hidden, _ = model.hidden_states(tokens, input_mask=input_mask)
        return hidden, model.unembedding()

    def _micro_loss(self, kind, params, mb, sft_weight=1.0):
        hidden, unemb = self._hidden(params, mb["tokens"], mb["input_mask"])
        if kind == "sft":
            lp = token_logprobs(hidden, unemb, mb["targets"], temperature=1.0)
            m = mb["loss_mask"] > 0
            nll = jnp.where(m, -lp, 0.0)
            return sft_weight * nll.sum(), m.sum().astype(jnp.float32), {"nll_sum": nll.sum()}
        adv = mb["advantages"]
        if self.optim.tis_cap > 0:
            lp_now = jax.lax.stop_gradient(token_logprobs(
                hidden, unemb, mb["targets"], temperature=self.optim.temperature))
            w = jnp.minimum(jnp.exp(lp_now - mb["old_logprobs"]), self.optim.tis_cap)
            adv = adv * jnp.where(mb["loss_mask"] > 0, w, 0.0)
        out = fused_policy_loss(hidden, unemb, mb["targets"], mb["old_logprobs"], adv,
                                mb["loss_mask"], self.loss_config,
                                temperature=self.optim.temperature, return_entropy=True)
        diag = {k: v for k, v in out.diagnostics.items() if k != "logprobs" and jnp.ndim(v) == 0}
        return out.loss_sum, out.count, diag

    def _micro_grads(self, kind, params, mb, sft_weight):
        """Gradient of one micro-batch's loss *sum*, with its count and diagnostics."""
        def loss_with_aux(p):
            loss_sum, count, diag = self._micro_loss(kind, p, mb, sft_weight)
            return loss_sum, (count, diag)

        with activation_sharding(self.mesh):
            (loss_sum, (count, diag)), grads = jax.value_and_grad(loss_with_aux, has_aux=True)(params)
        # Gradients laid out like the parameters: left to the compiler, some
        # come out replicated, and the accumulator kept between micro-batches
        # then holds several times the parameters' share on every device.
        grads = jax.lax.with_sharding_constraint(grads, self.param_shardings)
        return (grads, loss_sum, count), diag

    def _apply_grads(self, params, opt_state, acc):
        """Divides the summed gradients by the total count once (the exact
        full-batch mean) and takes one optimiser step."""
        grads, total, count = acc
        scale = jnp.where(count > 0, 1.0 / jnp.maximum(count, 1.0), 0.0)
        grads = jax.tree.map(lambda g: g * scale, grads)
        grad_norm = optax.tree.norm(grads)
        updates, opt_state = self.tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, {"loss": total * scale, "tokens_or_seqs": count,
                                   "grad_norm": grad_norm}

    def _update(self, kind: str, packed: PackedBatch, sft_weight: float = 1.0) -> dict[str, float]:
        arrays = dataclasses.asdict(packed)
        mbs = self.optim.micro_batch
        sharding = batch_sharding(self.mesh, 2, batch_size=mbs)
        acc, diags = None, []
        for rows, width in micro_batch_plan(packed.input_mask, mbs, self.trim_padding):
            mb = {k: jax.device_put(v[rows, :width], sharding) for k, v in arrays.items()}
            new, diag = self._grads(kind, self.params, mb, sft_weight)
            acc = new if acc is None else self._accumulate(acc, new)
            diags.append(diag)
        self.params, self.opt_state, m = self._apply(self.params, self.opt_state, acc)
        out = {k: float(np.mean([float(d[k]) for d in diags])) for k in diags[0]}
        out.update({k: float(v) for k, v in m.items()})
        return out

    def _device_batch(self, packed: PackedBatch) -> dict:
        arrays = dataclasses.asdict(packed)
        sharding = batch_sharding(self.mesh, 2, batch_size=packed.tokens.shape[0])
        return {k: jax.device_put(v, sharding) for k, v in arrays.items()}

    def policy_step(self, packed: PackedBatch) -> dict[str, float]:
        if self.loss_config is None:
            raise ValueError("this learner has no policy loss config")
        return self._update("policy", packed)

    def sft_step(self, packed: PackedBatch, weight: float = 1.0) -> dict[str, float]:
        """Masked next-token cross-entropy, times ``weight`` (self-distillation)."""
        return self._update("sft", packed, float(weight))

    def _logprobs(self, params, batch):
        hidden, unemb = self._hidden(params, batch["tokens"], batch["input_mask"])
        return token_logprobs(hidden, unemb, batch["targets"], temperature=self.optim.temperature)

    def logprobs(self, packed: PackedBatch) -> np.ndarray:
        return host_value(self._lp(self.params, self._device_batch(packed)))
