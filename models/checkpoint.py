"""Hugging Face checkpoints: load a local directory (config.json +
safetensors, single file or sharded with an index) straight into sharded
parameters, and save a model back in the same format.

Loading never builds a full host copy of the model: each parameter is made
with ``jax.make_array_from_callback``, whose callback reads from the
memory-mapped safetensors file only the slice a device needs.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Iterator, Mapping

import jax
import ml_dtypes
import numpy as np
from flax import nnx
from safetensors import safe_open
from safetensors.numpy import save_file

from models.config import DecoderConfig, config_to_hf, load_hf_config
from models.decoder import Decoder

log = logging.getLogger(__name__)

_NP_DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
# Our module path inside a layer -> (Hugging Face name, transpose?).
_LAYER_NAMES = {
    ("attn", "q_proj", "kernel"): ("self_attn.q_proj.weight", True),
    ("attn", "k_proj", "kernel"): ("self_attn.k_proj.weight", True),
    ("attn", "v_proj", "kernel"): ("self_attn.v_proj.weight", True),
    ("attn", "o_proj", "kernel"): ("self_attn.o_proj.weight", True),
    ("attn", "q_proj", "bias"): ("self_attn.q_proj.bias", False),
    ("attn", "k_proj", "bias"): ("self_attn.k_proj.bias", False),
    ("attn", "v_proj", "bias"): ("self_attn.v_proj.bias", False),
    ("attn", "o_proj", "bias"): ("self_attn.o_proj.bias", False),
    ("attn", "q_norm", "scale"): ("self_attn.q_norm.weight", False),
    ("attn", "k_norm", "scale"): ("self_attn.k_norm.weight", False),
    ("input_norm", "scale"): ("input_layernorm.weight", False),
    ("post_attn_norm", "scale"): ("post_attention_layernorm.weight", False),
    ("mlp", "gate_proj", "kernel"): ("mlp.gate_proj.weight", True),
    ("mlp", "up_proj", "kernel"): ("mlp.up_proj.weight", True),
    ("mlp", "down_proj", "kernel"): ("mlp.down_proj.weight", True),
    ("mlp", "gate_proj", "bias"): ("mlp.gate_proj.bias", False),
    ("mlp", "up_proj", "bias"): ("mlp.up_proj.bias", False),
    ("mlp", "down_proj", "bias"): ("mlp.down_proj.bias", False),
}
_TOP_NAMES = {
    ("embed", "embedding"): ("model.embed_tokens.weight", False),
    ("final_norm", "scale"): ("model.norm.weight", False),
    ("lm_head", "kernel"): ("lm_head.weight", True),
}


def _hf_names(path: tuple, scan: bool, num_layers: int) -> tuple[list[str], bool, bool]:
    """HF tensor names for one of our parameters: (names, transpose, stacked).

    A stacked (scan-over-layers) parameter maps to one name per layer."""
    if path in _TOP_NAMES:
        name, t = _TOP_NAMES[path]
        return [name], t, False
    if path[0] != "layers":
        raise KeyError(f"no Hugging Face name for parameter {path}")
    if scan:
        name, t = _LAYER_NAMES[path[1:]]
        return [f"model.layers.{i}.{name}" for i in range(num_layers)], t, True
    name, t = _LAYER_NAMES[path[2:]]
    return [f"model.layers.{path[1]}.{name}"], t, False


class SafetensorsDir:
    """Read access to the tensors of a HF directory, sharded or not."""

    def __init__(self, path: str):
        index = os.path.join(path, "model.safetensors.index.json")
        single = os.path.join(path, "model.safetensors")
        if os.path.exists(index):
            with open(index) as f:
                weight_map = json.load(f)["weight_map"]
        elif os.path.exists(single):
            with safe_open(single, framework="np") as f:
                weight_map = {k: "model.safetensors" for k in f.keys()}
        else:
            raise FileNotFoundError(
                f"{path!r} has neither model.safetensors nor model.safetensors.index.json")
        self.path = path
        self.weight_map: dict[str, str] = weight_map
        self._files: dict[str, Any] = {}

    def resolve(self, name: str) -> str:
        """The stored name of ``name``; base-model checkpoints (e.g. embedding
        models saved without an LM head) drop the "model." prefix."""
        if name not in self.weight_map and name.startswith("model."):
            if name[len("model."):] in self.weight_map:
                return name[len("model."):]
        return name

    def _file(self, name: str):
        name = self.resolve(name)
        fname = self.weight_map[name]
        if fname not in self._files:
            self._files[fname] = safe_open(os.path.join(self.path, fname), framework="np")
        return self._files[fname]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._file(name).get_slice(self.resolve(name)).get_shape())

    def read(self, name: str, index: tuple = ()) -> np.ndarray:
        """The slice ``index`` of tensor ``name`` (reads only that slice)."""
        sl = self._file(name).get_slice(self.resolve(name))
        return sl[index] if index else sl[:]

    def __contains__(self, name: str) -> bool:
        return self.resolve(name) in self.weight_map


def _flatten(tree: Mapping, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    for k, v in tree.items():
        if isinstance(v, Mapping):
            yield from _flatten(v, prefix + (k,))
        else:
            yield prefix + (k,), v


def _set(tree: dict, path: tuple, value) -> None:
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value


def load_checkpoint(path: str, mesh=None, rules=None, **config_overrides) -> Decoder:
    """Loads a Hugging Face decoder directory as a Decoder.

    With ``mesh``, each parameter lands directly on its rule-given sharding;
    without, on the default device. ``config_overrides`` change DecoderConfig
    fields that do not alter shapes (dtype, param_dtype, scan_layers, remat).
    """
    from models.sharding import DEFAULT_RULES, make_mesh, state_shardings

    cfg = load_hf_config(path, **config_overrides)
    tensors = SafetensorsDir(path)
    abstract = nnx.eval_shape(lambda: Decoder(cfg, nnx.Rngs(0)))
    graphdef, abstract_state = nnx.split(abstract)
    shardings = nnx.to_pure_dict(state_shardings(
        abstract_state, mesh if mesh is not None else make_mesh(devices=jax.devices()[:1]),
        rules or DEFAULT_RULES))
    pure = nnx.to_pure_dict(abstract_state)
    dtype = _NP_DTYPES[cfg.param_dtype]
    used = set()
    for p, leaf in list(_flatten(pure)):
        names, transpose, stacked = _hf_names(p, cfg.scan_layers, cfg.num_layers)
        missing = [n for n in names if n not in tensors]
        if missing:
            raise KeyError(f"checkpoint {path!r} lacks {missing[0]} (needed for {'/'.join(map(str, p))})")
        used.update(tensors.resolve(n) for n in names)
        expected = tuple(leaf.shape[1:] if stacked else leaf.shape)
        got = tensors.shape(names[0])
        if (got[::-1] if transpose else got) != expected:
            raise ValueError(f"{names[0]} has shape {got}, the config implies "
                             f"{expected[::-1] if transpose else expected}")

        def read(index, names=names, transpose=transpose, stacked=stacked):
            def one(name, idx):
                idx = tuple(idx)
                if transpose:
                    return tensors.read(name, idx[::-1]).T
                return tensors.read(name, idx)
            if stacked:
                layers = range(*index[0].indices(len(names)))
                return np.stack([one(names[i], index[1:]) for i in layers]).astype(dtype)
            return one(names[0], index).astype(dtype)

        sharding = _get(shardings, p)
        _set(pure, p, jax.make_array_from_callback(leaf.shape, sharding, read))
    unused = [k for k in tensors.weight_map if k not in used and "rotary_emb" not in k
              and not (cfg.tie_embeddings and k == "lm_head.weight")]
    if unused:
        log.warning("checkpoint tensors not used by the model: %s", unused[:10])
    nnx.replace_by_pure_dict(abstract_state, pure)
    return nnx.merge(graphdef, abstract_state)


def _get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def save_checkpoint(model: Decoder, path: str, max_shard_bytes: int = 4 << 30,
                    dtype: str | None = None) -> None:
    """Writes ``model`` as a Hugging Face directory (config.json + safetensors,
    sharded with an index file when larger than ``max_shard_bytes``)."""
    cfg: DecoderConfig = model.cfg
    dtype = dtype or cfg.param_dtype
    np_dtype = _NP_DTYPES[dtype]
    os.makedirs(path, exist_ok=True)
    pure = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    tensors: dict[str, np.ndarray] = {}
    for p, value in _flatten(pure):
        names, transpose, stacked = _hf_names(p, cfg.scan_layers, cfg.num_layers)
        host = np.asarray(jax.device_get(value)).astype(np_dtype)
        parts = list(host) if stacked else [host]
        for name, part in zip(names, parts):
            tensors[name] = np.ascontiguousarray(part.T if transpose else part)
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name in sorted(tensors):
        if shards[-1] and size + tensors[name].nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensors[name]
        size += tensors[name].nbytes
    if len(shards) == 1:
        save_file(shards[0], os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    else:
        weight_map = {}
        for i, shard in enumerate(shards):
            fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, os.path.join(path, fname), metadata={"format": "pt"})
            weight_map.update({k: fname for k in shard})
        total = sum(t.nbytes for t in tensors.values())
        with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    hf = config_to_hf(cfg)
    hf["dtype"] = dtype
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf, f, indent=2)
