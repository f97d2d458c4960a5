"""Policy loss straight from hidden states, in one pass over the vocabulary.

For token-level ratios the per-token loss depends on its own log-prob only, so
d(loss)/d(logprob_t) is known as soon as a chunk's log-probs are: each chunk
computes logits, log-probs, the loss and its gradients w.r.t. the chunk's
hidden states and the unembedding in the same pass (3 matmuls per chunk, like
the bare matmul forward + backward). The gradients are kept as residuals
(O(N*d + d*V), the size of the inputs) and scaled by the incoming cotangent
in the backward. No [N, V] array ever exists and nothing is recomputed.

Sequence-level ratios couple all tokens of a sequence, so for them this falls
back to kernels.logprobs.token_logprobs (chunked, recomputing backward)
followed by kernels.policy_losses.policy_loss: same result, one more matmul.

old_logprobs, advantages and mask are data: they receive no gradient.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from kernels.aggregation import aggregation_weights
from kernels.logprobs import (_check_inputs, _chunk_logits, _cotangent_for, _gather_target,
                              _lse_and_probs, _split_chunks, _varying_like, default_chunk_size,
                              token_logprobs)
from kernels.policy_losses import (LossOutput, PolicyLossConfig, loss_diagnostics,
                                   check_loss_shapes, policy_loss, sanitize_inputs,
                                   token_loss)


def _one_pass(hidden, unembedding, targets, old, adv, weights, config, temperature,
              chunk_size, with_entropy, with_grads):
    """Loss sum, log-probs, entropies and (optionally) the gradients of the sum
    w.r.t. hidden [N, d] and unembedding [d, V]; inputs flat over tokens."""
    n, d = hidden.shape
    inv_t = 1.0 / temperature
    compute_dtype = unembedding.dtype
    vocab_ids = jnp.arange(unembedding.shape[1], dtype=jnp.int32)

    def one_chunk(carry, args):
        d_unemb, loss_sum = carry
        h_c, t_c, old_c, adv_c, w_c = args
        logits = _chunk_logits(h_c, unembedding, inv_t)
        if with_entropy or with_grads:
            lse, probs = _lse_and_probs(logits)
        else:
            lse = jax.nn.logsumexp(logits, axis=-1)
        logprob = _gather_target(logits, t_c) - lse
        valid = (w_c != 0) & jnp.isfinite(logprob) & jnp.isfinite(old_c) & jnp.isfinite(adv_c)
        lp_s, old_s, adv_s = (jnp.where(valid, x, 0.0) for x in (logprob, old_c, adv_c))
        # The loss is elementwise in lp, so a JVP with ones gives every d loss_t / d lp_t.
        loss_t, dloss_t = jax.jvp(lambda x: token_loss(x, old_s, adv_s, config),
                                  (lp_s,), (jnp.ones_like(lp_s),))
        loss_sum = loss_sum + jnp.sum(jnp.where(valid, w_c * loss_t, 0.0))
        entropy = (lse - jnp.sum(probs * logits, axis=-1)) if with_entropy else jnp.zeros_like(lse)
        if not with_grads:
            return (d_unemb, loss_sum), (logprob, entropy, jnp.zeros((h_c.shape[0], 0)))
        g = jnp.where(valid, w_c * dloss_t, 0.0)
        h_safe = jnp.where(valid[:, None], h_c, jnp.zeros_like(h_c))
        onehot = (vocab_ids[None, :] == t_c[:, None]).astype(jnp.float32)
        d_logits = jnp.where(valid[:, None], g[:, None] * (onehot - probs), 0.0) * inv_t
        d_logits = d_logits.astype(compute_dtype)
        d_h = jnp.dot(d_logits, unembedding.T, preferred_element_type=jnp.float32)
        d_unemb = d_unemb + jnp.dot(h_safe.T, d_logits, preferred_element_type=jnp.float32)
        return (d_unemb, loss_sum), (logprob, entropy, d_h.astype(hidden.dtype))

    xs = tuple(_split_chunks(x, chunk_size) for x in (hidden, targets, old, adv, weights))
    carry0 = (jnp.zeros(unembedding.shape if with_grads else (0,), jnp.float32),
              jnp.zeros((), jnp.float32))
    carry0 = tuple(_varying_like(c, unembedding, *xs) for c in carry0)
    (d_unemb, loss_sum), (logprob, entropy, d_hidden) = jax.lax.scan(one_chunk, carry0, xs)
    logprob, entropy = logprob.reshape(-1)[:n], entropy.reshape(-1)[:n]
    if not with_grads:
        return loss_sum, logprob, entropy, None, None
    d_hidden = d_hidden.reshape(-1, d)[:n]
    return loss_sum, logprob, entropy, d_hidden, d_unemb.astype(unembedding.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8, 9))
def _fused_sum(hidden, unembedding, targets, old, adv, weights, config, temperature,
               chunk_size, with_entropy):
    loss_sum, logprob, entropy, _, _ = _one_pass(
        hidden, unembedding, targets, old, adv, weights, config, temperature, chunk_size,
        with_entropy, with_grads=False)
    return loss_sum, logprob, entropy


def _fused_sum_fwd(hidden, unembedding, targets, old, adv, weights, config, temperature,
                   chunk_size, with_entropy):
    loss_sum, logprob, entropy, d_hidden, d_unemb = _one_pass(
        hidden, unembedding, targets, old, adv, weights, config, temperature, chunk_size,
        with_entropy, with_grads=True)
    # Empty slices carry hidden's and unembedding's shard_map types (no data).
    type_refs = (hidden.reshape(-1)[:0], unembedding.reshape(-1)[:0])
    return (loss_sum, logprob, entropy), (d_hidden, d_unemb) + type_refs


def _fused_sum_bwd(config, temperature, chunk_size, with_entropy, residuals, cotangents):
    # Only loss_sum is differentiable: fused_policy_loss stop-gradients the
    # log-probs and entropies it returns, so their cotangents are always zero.
    d_hidden, d_unemb, hidden, unembedding = residuals
    g = cotangents[0]
    return (_cotangent_for((g * d_hidden).astype(d_hidden.dtype), hidden),
            _cotangent_for((g * d_unemb).astype(d_unemb.dtype), unembedding),
            None, None, None, None)


_fused_sum.defvjp(_fused_sum_fwd, _fused_sum_bwd)


def fused_policy_loss(hidden, unembedding, targets, old_logprobs, advantages, mask,
                      config: PolicyLossConfig, *, temperature: float = 1.0,
                      chunk_size: int | None = None, return_entropy: bool = False):
    """policy_loss(token_logprobs(hidden, unembedding, targets), ...) without [N, V] logits.

    Args:
      hidden: [B, T, d] final hidden states; unembedding: [d, V];
      targets: [B, T] int token ids; old_logprobs, mask: [B, T];
      advantages: [B, T] or [B]; config: PolicyLossConfig;
      temperature, chunk_size: as in token_logprobs;
      return_entropy: put the per-token entropy mean in the diagnostics.

    Returns:
      LossOutput(loss_sum, count, diagnostics) equal to the unfused
      composition (same guard rails); diagnostics also holds "logprobs"
      ([B, T], stop-gradient) for logging or the next step's old log-probs.
      Differentiable w.r.t. hidden and unembedding.
    """
    if hidden.ndim != 3:
        raise ValueError(f"hidden must be [B, T, d]; got {hidden.shape}")
    _check_inputs(hidden, unembedding, targets, temperature)
    if config.ratio_level != "token":
        logprob = token_logprobs(hidden, unembedding, targets, temperature=temperature,
                                 chunk_size=chunk_size, return_entropy=return_entropy)
        entropy = None
        if return_entropy:
            logprob, entropy = logprob
        out = policy_loss(logprob, old_logprobs, advantages, mask, config, entropy)
        out.diagnostics["logprobs"] = jax.lax.stop_gradient(logprob)
        return out
    shape = targets.shape
    if old_logprobs.shape != shape:
        raise ValueError(f"old_logprobs must have targets' shape {shape}; got {old_logprobs.shape}")
    check_loss_shapes(old_logprobs, old_logprobs, advantages, mask)
    adv_full = jnp.broadcast_to(
        advantages[:, None] if advantages.ndim == 1 else advantages, shape).astype(jnp.float32)
    weights, count = aggregation_weights(mask, config.aggregation, config.norm_constant)
    n = int(np.prod(shape))
    if chunk_size is None:
        chunk_size = default_chunk_size(n, unembedding.shape[1])
    if not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None; got {chunk_size!r}")
    # Raw old/adv (not zeroed) go in so the kernel can see which are non-finite.
    flat = lambda x: x.reshape(-1)  # noqa: E731
    loss_sum, logprob, entropy = _fused_sum(
        hidden.reshape(n, -1), unembedding, flat(targets).astype(jnp.int32),
        flat(old_logprobs.astype(jnp.float32)), flat(adv_full), flat(weights), config,
        float(temperature), int(chunk_size), bool(return_entropy))
    logprob = jax.lax.stop_gradient(logprob.reshape(shape))
    entropy = jax.lax.stop_gradient(entropy.reshape(shape))
    lp, old, adv, valid, nonfinite = sanitize_inputs(logprob, old_logprobs, advantages, mask)
    log_ratio = jnp.where(valid, lp - old, 0.0)
    diagnostics = loss_diagnostics(lp, old, adv, valid, log_ratio, mask, nonfinite, config,
                                   entropy if return_entropy else None)
    diagnostics["logprobs"] = logprob
    return LossOutput(loss_sum, count, diagnostics)
