"""Small NNX building blocks shared by the decoder and the encoder.

Every parameter carries ``axes``: the logical axis name of each dimension.
models/sharding.py turns those names into mesh shardings through one rule
table, so no module mentions a mesh axis.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx


class Linear(nnx.Module):
    """y = x @ kernel (+ bias); kernel stored [in, out] (Hugging Face stores
    [out, in]: the checkpoint code transposes)."""

    def __init__(self, d_in: int, d_out: int, *, axes: tuple, bias: bool, rngs: nnx.Rngs,
                 param_dtype=jnp.float32, dtype=jnp.float32, init_std: float | None = None):
        std = init_std if init_std is not None else 1.0 / math.sqrt(d_in)
        self.kernel = nnx.Param(
            (std * jax.random.normal(rngs.params(), (d_in, d_out))).astype(param_dtype), axes=axes)
        self.bias = nnx.Param(jnp.zeros((d_out,), param_dtype), axes=axes[1:]) if bias else None
        self.dtype = dtype

    def __call__(self, x):
        y = jnp.dot(x.astype(self.dtype), self.kernel[...].astype(self.dtype))
        if self.bias is not None:
            y = y + self.bias[...].astype(self.dtype)
        return y


class RMSNorm(nnx.Module):
    """x / sqrt(mean(x^2) + eps) * scale, normalised in fp32 like the HF models."""

    def __init__(self, dim: int, *, eps: float, param_dtype=jnp.float32, axes=("norm",)):
        self.scale = nnx.Param(jnp.ones((dim,), param_dtype), axes=axes)
        self.eps = eps

    def __call__(self, x):
        dtype = x.dtype
        x32 = x.astype(jnp.float32)
        x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        # HF casts back to the input dtype before multiplying by the weight.
        return self.scale[...].astype(dtype) * x32.astype(dtype)


class Embed(nnx.Module):
    def __init__(self, vocab: int, dim: int, *, rngs: nnx.Rngs, param_dtype=jnp.float32,
                 dtype=jnp.float32, init_std: float = 0.02):
        self.embedding = nnx.Param(
            (init_std * jax.random.normal(rngs.params(), (vocab, dim))).astype(param_dtype),
            axes=("vocab", "embed"))
        self.dtype = dtype

    def __call__(self, ids):
        return jnp.take(self.embedding[...], ids, axis=0).astype(self.dtype)


def rope_inverse_frequencies(head_dim: int, theta: float, scaling: tuple | None) -> jnp.ndarray:
    """Inverse frequencies of rotary embeddings, Hugging Face conventions
    (default, linear, and the Llama-3 piecewise scaling of long wavelengths)."""
    inv = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    if scaling is None:
        return inv
    if scaling[0] == "linear":
        return inv / scaling[1]
    _, factor, low_ff, high_ff, orig = scaling
    wavelen = 2 * math.pi / inv
    low_wavelen, high_wavelen = orig / low_ff, orig / high_ff
    scaled = jnp.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (orig / wavelen - low_ff) / (high_ff - low_ff)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return jnp.where(medium, smoothed, scaled)


def apply_rope(x, positions, inv_freq):
    """Rotates x [B, T, H, D] by per-row positions [B, T] (rotate-half layout)."""
    angles = positions.astype(jnp.float32)[..., None] * inv_freq  # [B, T, D/2]
    cos = jnp.cos(angles)[:, :, None, :]
    sin = jnp.sin(angles)[:, :, None, :]
    cos = jnp.concatenate([cos, cos], -1).astype(x.dtype)
    sin = jnp.concatenate([sin, sin], -1).astype(x.dtype)
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin
