"""Token log-probabilities from final hidden states, computed in vocabulary-sized
chunks of tokens so the full [tokens, vocab] logits never exist at once.

The logits of a chunk of C tokens are `hidden[C, d] @ unembedding[d, V]`, divided
by the sampling temperature. The forward pass keeps only one log-sum-exp per
token; the backward pass recomputes each chunk's logits (one extra matmul) and
accumulates d(unembedding) in fp32 across chunks. Peak extra memory is therefore
O(C * V) instead of O(N * V), in both passes.

Precision: the matmuls take the inputs' dtype (bf16 stays bf16 on the MXU /
tensor cores) and always accumulate in fp32; softmax, log-sum-exp and entropy
are fp32. Outputs are fp32; gradients come back in the inputs' dtypes.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

# Elements of one chunk's [C, V] fp32 logits when chunk_size is not given:
# 2**26 elements = 256 MiB; a handful of such buffers are live in the backward.
_DEFAULT_CHUNK_ELEMENTS = 2**26
_MAX_DEFAULT_CHUNK = 4096


def default_chunk_size(num_tokens: int, vocab_size: int) -> int:
    """Tokens per chunk: as many as fit _DEFAULT_CHUNK_ELEMENTS logits, a multiple
    of 8, at most _MAX_DEFAULT_CHUNK and no more than the (rounded-up) token count."""
    by_memory = max(8, (_DEFAULT_CHUNK_ELEMENTS // max(vocab_size, 1)) // 8 * 8)
    by_tokens = max(8, -(-num_tokens // 8) * 8)
    return int(min(by_memory, by_tokens, _MAX_DEFAULT_CHUNK))


def _chunk_logits(hidden_chunk, unembedding, inv_temperature):
    """fp32 logits [C, V] of one chunk (inputs' dtype in, fp32 accumulation)."""
    logits = jnp.dot(hidden_chunk, unembedding, preferred_element_type=jnp.float32)
    return logits * inv_temperature


def _lse_and_probs(logits):
    """Row log-sum-exp and softmax from a single exp over the chunk (the
    elementwise work, not the matmuls, dominates when d is small)."""
    row_max = jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
    shifted = jnp.exp(logits - row_max)
    total = jnp.sum(shifted, axis=-1, keepdims=True)
    return (row_max + jnp.log(total))[:, 0], shifted / total


def _gather_target(logits, targets):
    # Out-of-range targets (e.g. an ignore index of -100) give NaN, never a
    # silently wrong number; callers mask such tokens out.
    return jnp.take_along_axis(
        logits, targets[:, None], axis=1, mode="fill", fill_value=jnp.nan)[:, 0]


def _varying_axes(x) -> set:
    """The jax.shard_map axes x varies over (empty outside shard_map)."""
    aval = jax.typeof(x)
    # Older jax exposes aval.vma; jax 0.10 keeps it in aval.mat.varying.
    varying = getattr(aval, "vma", None)
    if varying is None:
        varying = getattr(getattr(aval, "mat", None), "varying", None)
    return set(varying or ())


def _varying_like(x, *refs):
    """x marked as varying over every shard_map axis that any of refs varies
    over, so a scan carry started from zeros has the type the loop body gives
    it when the kernel runs per shard inside jax.shard_map (a no-op outside)."""
    axes = set().union(*(_varying_axes(r) for r in refs))
    return jax.lax.pcast(x, tuple(sorted(axes)), to="varying") if axes else x


def _cotangent_for(cotangent, primal):
    """Inside shard_map, a replicated input used with per-shard data gets the
    sum of the shards' cotangents (what autodiff of an implicit pvary gives)."""
    extra = _varying_axes(cotangent) - _varying_axes(primal)
    return jax.lax.psum(cotangent, tuple(sorted(extra))) if extra else cotangent


def _split_chunks(x, chunk_size):
    """Pads the leading axis to a multiple of chunk_size and reshapes to
    [num_chunks, chunk_size, ...]. Padded rows are zeros (targets: 0)."""
    n = x.shape[0]
    padded = -(-n // chunk_size) * chunk_size
    if padded != n:
        x = jnp.pad(x, [(0, padded - n)] + [(0, 0)] * (x.ndim - 1))
    return x.reshape((padded // chunk_size, chunk_size) + x.shape[1:])


def _forward_chunks(hidden, unembedding, targets, temperature, chunk_size, with_entropy):
    n = hidden.shape[0]
    inv_t = 1.0 / temperature

    def one_chunk(args):
        h_c, t_c = args
        logits = _chunk_logits(h_c, unembedding, inv_t)
        if with_entropy:
            lse, probs = _lse_and_probs(logits)
            entropy = lse - jnp.sum(probs * logits, axis=-1)
        else:
            lse = jax.nn.logsumexp(logits, axis=-1)
            entropy = jnp.zeros_like(lse)
        return _gather_target(logits, t_c) - lse, entropy, lse

    outs = jax.lax.map(one_chunk, (_split_chunks(hidden, chunk_size),
                                   _split_chunks(targets, chunk_size)))
    return tuple(o.reshape(-1)[:n] for o in outs)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _chunked_logprobs(hidden, unembedding, targets, temperature, chunk_size, with_entropy):
    logprob, entropy, _ = _forward_chunks(
        hidden, unembedding, targets, temperature, chunk_size, with_entropy)
    return logprob, entropy


def _chunked_logprobs_fwd(hidden, unembedding, targets, temperature, chunk_size, with_entropy):
    logprob, entropy, lse = _forward_chunks(
        hidden, unembedding, targets, temperature, chunk_size, with_entropy)
    # Residuals are O(N): the inputs (alive anyway) plus one number per token.
    return (logprob, entropy), (hidden, unembedding, targets, lse, entropy)


def _chunked_logprobs_bwd(temperature, chunk_size, with_entropy, residuals, cotangents):
    hidden, unembedding, targets, lse, entropy = residuals
    g_logprob, g_entropy = cotangents
    n = hidden.shape[0]
    inv_t = 1.0 / temperature
    compute_dtype = unembedding.dtype
    vocab_ids = jnp.arange(unembedding.shape[1], dtype=targets.dtype)

    def one_chunk(d_unemb, args):
        h_c, t_c, lse_c, ent_c, g_lp, g_ent = args
        # Rows whose cotangent is zero (masked or padded tokens) are zeroed before
        # the matmuls, so a NaN/inf hidden state there cannot leak into d_unemb.
        active = (g_lp != 0) | (g_ent != 0)
        h_c = jnp.where(active[:, None], h_c, jnp.zeros_like(h_c))
        lse_c = jnp.where(active, lse_c, 0.0)
        logits = _chunk_logits(h_c, unembedding, inv_t)
        log_probs = logits - lse_c[:, None]
        probs = jnp.exp(log_probs)
        onehot = (vocab_ids[None, :] == t_c[:, None]).astype(jnp.float32)
        # d logprob_target / d logits = onehot - p
        d_logits = g_lp[:, None] * (onehot - probs)
        if with_entropy:
            # d H / d logits_k = -p_k (log p_k + H)
            d_logits = d_logits - g_ent[:, None] * probs * (log_probs + ent_c[:, None])
        d_logits = jnp.where(active[:, None], d_logits, 0.0) * inv_t
        d_logits = d_logits.astype(compute_dtype)
        d_h = jnp.dot(d_logits, unembedding.T, preferred_element_type=jnp.float32)
        d_unemb = d_unemb + jnp.dot(h_c.T, d_logits, preferred_element_type=jnp.float32)
        return d_unemb, d_h.astype(hidden.dtype)

    g_ent_in = g_entropy if with_entropy else jnp.zeros_like(g_logprob)
    xs = tuple(_split_chunks(x, chunk_size) for x in
               (hidden, targets, lse, entropy, g_logprob.astype(jnp.float32),
                g_ent_in.astype(jnp.float32)))
    d_unemb0 = _varying_like(jnp.zeros(unembedding.shape, jnp.float32), unembedding, *xs)
    d_unemb, d_hidden = jax.lax.scan(one_chunk, d_unemb0, xs)
    d_hidden = d_hidden.reshape(-1, hidden.shape[1])[:n]
    return (_cotangent_for(d_hidden, hidden),
            _cotangent_for(d_unemb.astype(unembedding.dtype), unembedding), None)


_chunked_logprobs.defvjp(_chunked_logprobs_fwd, _chunked_logprobs_bwd)


def _check_inputs(hidden, unembedding, targets, temperature):
    if hidden.ndim < 1 or unembedding.ndim != 2:
        raise ValueError(
            f"hidden must be [..., d] and unembedding [d, V]; got hidden {hidden.shape}, "
            f"unembedding {unembedding.shape}")
    if hidden.shape[-1] != unembedding.shape[0]:
        raise ValueError(
            f"hidden's last axis ({hidden.shape[-1]}) must equal unembedding's first "
            f"axis ({unembedding.shape[0]})")
    if tuple(targets.shape) != tuple(hidden.shape[:-1]):
        raise ValueError(
            f"targets must have hidden's leading shape {hidden.shape[:-1]}; got "
            f"{targets.shape}")
    if not jnp.issubdtype(targets.dtype, jnp.integer):
        raise ValueError(f"targets must be integer token ids; got dtype {targets.dtype}")
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature)
            and temperature > 0):
        raise ValueError(f"temperature must be a finite Python number > 0; got {temperature!r}")


def token_logprobs(hidden, unembedding, targets, *, temperature: float = 1.0,
                   chunk_size: int | None = None, return_entropy: bool = False):
    """log softmax(hidden @ unembedding / temperature)[target] per token, chunked.

    Args:
      hidden: [..., d] final hidden states (any float dtype; bf16 is fine).
      unembedding: [d, V] output projection (the LM head / tied embedding^T).
      targets: [...] int token ids. Ids outside [0, V) give a NaN log-prob:
        mask those tokens out (the policy losses drop masked and non-finite
        tokens, and such tokens then receive exactly zero gradient).
      temperature: the sampling temperature (a static Python float > 0).
      chunk_size: tokens per chunk; None picks default_chunk_size(). Need not
        divide the token count.
      return_entropy: also return the per-token entropy of the tempered
        distribution (differentiable too).

    Returns:
      fp32 log-probs of shape [...], and with return_entropy a pair
      (logprobs, entropy). Differentiable w.r.t. hidden and unembedding
      (custom VJP that recomputes chunk logits; memory O(chunk_size * V)).
    """
    _check_inputs(hidden, unembedding, targets, temperature)
    lead = targets.shape
    flat_hidden = hidden.reshape(-1, hidden.shape[-1])
    flat_targets = targets.reshape(-1).astype(jnp.int32)
    n = flat_hidden.shape[0]
    if chunk_size is None:
        chunk_size = default_chunk_size(n, unembedding.shape[1])
    if not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None; got {chunk_size!r}")
    logprob, entropy = _chunked_logprobs(
        flat_hidden, unembedding, flat_targets, float(temperature), int(chunk_size),
        bool(return_entropy))
    logprob = logprob.reshape(lead)
    if return_entropy:
        return logprob, entropy.reshape(lead)
    return logprob


def naive_token_logprobs(hidden, unembedding, targets, *, temperature: float = 1.0,
                         return_entropy: bool = False):
    """The unfused baseline: full [N, V] logits, log_softmax, gather; plain
    autodiff. Same conventions as token_logprobs. For tests and benchmarks."""
    _check_inputs(hidden, unembedding, targets, temperature)
    logits = jnp.einsum("...d,dv->...v", hidden, unembedding,
                        preferred_element_type=jnp.float32) / temperature
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    logprob = jnp.take_along_axis(
        log_probs, targets[..., None].astype(jnp.int32), axis=-1, mode="fill",
        fill_value=jnp.nan)[..., 0]
    if return_entropy:
        entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
        return logprob, entropy
    return logprob
