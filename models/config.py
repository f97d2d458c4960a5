"""Decoder configuration: one frozen dataclass for the Llama 3.x, Qwen2/2.5
and Qwen3 families, read from and written back to Hugging Face config.json.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import jax.numpy as jnp

FAMILIES = ("llama", "qwen2", "qwen3")
_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "float16": jnp.float16}
DTYPE_NAMES = tuple(_DTYPES)
_SUPPORTED_ROPE = ("default", "linear", "llama3")


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """Architecture of a decoder-only LM.

    Attributes follow Hugging Face names where one exists. ``family`` selects
    the small differences between families: Qwen2 has q/k/v biases, Qwen3
    has RMSNorm on q and k per head, Llama may have biases everywhere
    (``attention_bias``) and the Llama-3 rope scaling.
    """

    family: str = "llama"
    vocab_size: int = 256
    hidden_size: int = 64
    intermediate_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 16
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    # ("llama3", factor, low_freq_factor, high_freq_factor, original_max_pos),
    # ("linear", factor) or None; a tuple so the config stays hashable.
    rope_scaling: tuple | None = None
    max_position_embeddings: int = 2048
    tie_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2: biases on q/k/v only.
    o_bias: bool = False  # Llama attention_bias=True: o_proj has one too.
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3.
    bos_token_id: int | None = None
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None
    param_dtype: str = "float32"
    dtype: str = "float32"  # compute dtype; softmax and norms run in fp32
    scan_layers: bool = False
    remat: bool = False
    # Attention over this many queries at a time (0 = all at once): exact,
    # and the [heads, queries, keys] scores held at once shrink by
    # tokens / attention_chunk, the largest activation of long samples.
    attention_chunk: int = 0

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"family={self.family!r}; valid: {FAMILIES}")
        for name in ("param_dtype", "dtype"):
            if getattr(self, name) not in _DTYPES:
                raise ValueError(f"{name}={getattr(self, name)!r}; valid: {tuple(_DTYPES)}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} must be even for RoPE")
        if self.rope_scaling is not None and self.rope_scaling[0] not in _SUPPORTED_ROPE:
            raise ValueError(
                f"rope scaling {self.rope_scaling[0]!r} is not supported; valid: {_SUPPORTED_ROPE}")
        if self.attention_chunk < 0:
            raise ValueError(f"attention_chunk must be >= 0 (0 = off), got {self.attention_chunk}")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @property
    def jnp_dtype(self):
        return _DTYPES[self.dtype]

    @property
    def jnp_param_dtype(self):
        return _DTYPES[self.param_dtype]

    @property
    def eos_ids(self) -> tuple[int, ...]:
        if self.eos_token_id is None:
            return ()
        if isinstance(self.eos_token_id, int):
            return (self.eos_token_id,)
        return tuple(self.eos_token_id)

    def replace(self, **kw) -> "DecoderConfig":
        return dataclasses.replace(self, **kw)

    def num_params(self) -> int:
        d, f, v, hd = self.hidden_size, self.intermediate_size, self.vocab_size, self.head_dim
        q, kv = self.num_heads * hd, self.num_kv_heads * hd
        per_layer = d * (q + 2 * kv) + q * d + 3 * d * f + 2 * d
        per_layer += (q + 2 * kv) * self.qkv_bias + d * self.o_bias + (2 * f + d) * self.mlp_bias
        per_layer += 2 * hd * self.qk_norm
        return self.num_layers * per_layer + v * d * (1 if self.tie_embeddings else 2) + d


def _rope_from_hf(hf: dict) -> tuple[float, tuple | None]:
    # transformers >= 5 writes "rope_parameters"; older files "rope_theta" and
    # "rope_scaling". Both are accepted.
    params = dict(hf.get("rope_parameters") or {})
    scaling = hf.get("rope_scaling") or {}
    theta = params.get("rope_theta", hf.get("rope_theta", 10000.0))
    merged = {**scaling, **params}
    kind = merged.get("rope_type", merged.get("type", "default"))
    if kind == "default":
        return float(theta), None
    if kind == "linear":
        return float(theta), ("linear", float(merged["factor"]))
    if kind == "llama3":
        return float(theta), ("llama3", float(merged["factor"]), float(merged["low_freq_factor"]),
                              float(merged["high_freq_factor"]),
                              int(merged["original_max_position_embeddings"]))
    raise ValueError(f"rope scaling {kind!r} is not supported; valid: {_SUPPORTED_ROPE}")


def config_from_hf(hf: dict, **overrides: Any) -> DecoderConfig:
    """Builds a DecoderConfig from a Hugging Face config.json dictionary."""
    model_type = hf.get("model_type", "")
    family = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}.get(model_type)
    if family is None:
        raise ValueError(f"model_type={model_type!r} is not supported; valid: llama, qwen2, qwen3")
    if hf.get("use_sliding_window"):
        raise ValueError("sliding-window attention (use_sliding_window=true) is not supported")
    theta, scaling = _rope_from_hf(hf)
    heads = hf["num_attention_heads"]
    eos = hf.get("eos_token_id")
    attention_bias = bool(hf.get("attention_bias", False))
    torch_dtype = hf.get("dtype", hf.get("torch_dtype")) or "float32"
    kw = dict(
        family=family,
        vocab_size=hf["vocab_size"],
        hidden_size=hf["hidden_size"],
        intermediate_size=hf["intermediate_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=heads,
        num_kv_heads=hf.get("num_key_value_heads") or heads,
        head_dim=hf.get("head_dim") or hf["hidden_size"] // heads,
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
        rope_theta=theta,
        rope_scaling=scaling,
        max_position_embeddings=hf.get("max_position_embeddings", 2048),
        tie_embeddings=bool(hf.get("tie_word_embeddings", family != "llama")),
        qkv_bias=family == "qwen2" or (family != "qwen2" and attention_bias),
        o_bias=family != "qwen2" and attention_bias,
        mlp_bias=bool(hf.get("mlp_bias", False)),
        qk_norm=family == "qwen3",
        bos_token_id=hf.get("bos_token_id"),
        eos_token_id=tuple(eos) if isinstance(eos, list) else eos,
        pad_token_id=hf.get("pad_token_id"),
        param_dtype=torch_dtype if torch_dtype in _DTYPES else "float32",
        dtype=torch_dtype if torch_dtype in _DTYPES else "float32",
    )
    kw.update(overrides)
    return DecoderConfig(**kw)


def config_to_hf(cfg: DecoderConfig) -> dict:
    """The Hugging Face config.json dictionary of a DecoderConfig."""
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
    rope: dict[str, Any] = {"rope_theta": cfg.rope_theta, "rope_type": "default"}
    if cfg.rope_scaling and cfg.rope_scaling[0] == "linear":
        rope.update(rope_type="linear", factor=cfg.rope_scaling[1])
    elif cfg.rope_scaling and cfg.rope_scaling[0] == "llama3":
        _, factor, low, high, orig = cfg.rope_scaling
        rope.update(rope_type="llama3", factor=factor, low_freq_factor=low,
                    high_freq_factor=high, original_max_position_embeddings=orig)
    hf = {
        "architectures": [arch[cfg.family]],
        "model_type": cfg.family,
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_parameters": rope,
        "rope_theta": cfg.rope_theta,
        "max_position_embeddings": cfg.max_position_embeddings,
        "tie_word_embeddings": cfg.tie_embeddings,
        "bos_token_id": cfg.bos_token_id,
        "eos_token_id": list(cfg.eos_token_id) if isinstance(cfg.eos_token_id, tuple)
        else cfg.eos_token_id,
        "pad_token_id": cfg.pad_token_id,
        "dtype": cfg.param_dtype,
    }
    if cfg.family == "llama":
        hf["attention_bias"] = cfg.o_bias
        hf["mlp_bias"] = cfg.mlp_bias
    if cfg.rope_scaling:
        hf["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    return hf


def load_hf_config(path: str, **overrides: Any) -> DecoderConfig:
    """Reads ``path/config.json`` (or a config.json file path)."""
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    if not os.path.exists(file):
        raise FileNotFoundError(f"no config.json at {path!r}")
    with open(file) as f:
        return config_from_hf(json.load(f), **overrides)


def tiny_config(family: str = "llama", **kw: Any) -> DecoderConfig:
    """A few-thousand-parameter config of each family, for tests and CPU demos."""
    base = dict(family=family, vocab_size=128, hidden_size=32, intermediate_size=64,
                num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
                tie_embeddings=family != "llama", qkv_bias=family == "qwen2",
                qk_norm=family == "qwen3", eos_token_id=1, bos_token_id=0, pad_token_id=0)
    if family == "llama":
        base["rope_scaling"] = ("llama3", 8.0, 1.0, 4.0, 64)
        base["rope_theta"] = 500000.0
    base.update(kw)
    return DecoderConfig(**base)
