"""Meshes and sharding rules, declared once.

Parameters name their dimensions with logical axes (``axes`` metadata on
each nnx.Param: 'vocab', 'embed', 'heads', 'kv_heads', 'mlp', ...). A rule
table maps logical axes to mesh axes; everything else (parameters, optimizer
state, batches, activations) gets its sharding from that one table. A
dimension that a mesh axis does not divide is replicated instead of failing,
so the same rules serve a 1-CPU test and a TPU pod.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from typing import Any, Mapping, Sequence

import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH_AXES = ("data", "fsdp", "tp")

# Logical axis -> mesh axis (or tuple of mesh axes, or None = replicated).
DEFAULT_RULES: Mapping[str, Any] = {
    "batch": ("data", "fsdp"),
    "seq": None,
    "embed": "fsdp",
    "vocab": "tp",
    "heads": "tp",
    "kv_heads": "tp",
    "mlp": "tp",
    "head_dim": None,
    "norm": None,
    "layers": None,
    "act_embed": None,
    "act_heads": "tp",
    "act_mlp": "tp",
    "act_vocab": "tp",
}


@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """Mesh axis sizes; -1 means "all remaining devices" (at most one -1)."""

    data: int = 1
    fsdp: int = -1
    tp: int = 1

    def sizes(self, n_devices: int) -> tuple[int, int, int]:
        sizes = [self.data, self.fsdp, self.tp]
        if sizes.count(-1) > 1:
            raise ValueError(f"at most one mesh axis may be -1, got {self}")
        known = math.prod(s for s in sizes if s != -1)
        if any(s == 0 or s < -1 for s in sizes):
            raise ValueError(f"mesh axis sizes must be positive or -1, got {self}")
        if -1 in sizes:
            if n_devices % known:
                raise ValueError(f"{n_devices} devices cannot be split as {self}")
            sizes[sizes.index(-1)] = n_devices // known
        if math.prod(sizes) != n_devices:
            raise ValueError(f"mesh {dict(zip(MESH_AXES, sizes))} needs {math.prod(sizes)} "
                             f"devices, {n_devices} are available")
        return tuple(sizes)


def make_mesh(config: MeshConfig | None = None, devices: Sequence | None = None) -> Mesh:
    """A ('data', 'fsdp', 'tp') mesh over ``devices`` (default: all devices)."""
    devices = list(jax.devices() if devices is None else devices)
    sizes = (config or MeshConfig()).sizes(len(devices))
    return Mesh(np.asarray(devices).reshape(sizes), MESH_AXES)


def logical_to_spec(axes: Sequence[str | None], shape: Sequence[int], mesh: Mesh,
                    rules: Mapping[str, Any] = DEFAULT_RULES) -> P:
    """PartitionSpec for a value of ``shape`` whose dimensions are named ``axes``.

    Mesh axes of size 1, axes already used by an earlier dimension, and axes
    that do not divide the dimension are dropped (that dimension is then
    replicated along them).
    """
    if len(axes) != len(shape):
        raise ValueError(f"logical axes {tuple(axes)} do not match shape {tuple(shape)}")
    used: set[str] = set()
    spec = []
    for name, dim in zip(axes, shape):
        if name is not None and name not in rules:
            raise ValueError(f"logical axis {name!r} has no rule; known: {sorted(rules)}")
        target = rules.get(name) if name is not None else None
        targets = (target,) if isinstance(target, str) else tuple(target or ())
        kept = []
        for mesh_axis in targets:
            size = mesh.shape[mesh_axis]
            if size == 1 or mesh_axis in used:
                continue
            if dim % (size * math.prod(mesh.shape[a] for a in kept)):
                continue
            kept.append(mesh_axis)
        used.update(kept)
        spec.append(tuple(kept) if len(kept) > 1 else (kept[0] if kept else None))
    return P(*spec)


def _shape(v: nnx.Variable) -> tuple[int, ...]:
    return tuple(v.get_value().shape)


def _variable_axes(v: nnx.Variable) -> tuple:
    axes = tuple(v.get_metadata().get("axes", ()))
    ndim = len(_shape(v))
    if len(axes) + 1 == ndim:  # stacked by nnx.vmap for scan-over-layers
        axes = ("layers",) + axes
    if len(axes) != ndim:
        axes = (None,) * ndim
    return axes


def _is_variable(x) -> bool:
    return isinstance(x, nnx.Variable)


def state_shardings(state: nnx.State, mesh: Mesh, rules: Mapping[str, Any] = DEFAULT_RULES):
    """NamedSharding for every variable of an nnx.State (abstract or concrete).

    The result has the same tree structure as ``state`` (each Variable holds
    its sharding), so it serves as jit in/out_shardings and for device_put.
    """
    def one(v):
        spec = logical_to_spec(_variable_axes(v), _shape(v), mesh, rules)
        return v.replace(NamedSharding(mesh, spec))
    return jax.tree.map(one, state, is_leaf=_is_variable)


def optimizer_shardings(tx, params: nnx.State, mesh: Mesh,
                        rules: Mapping[str, Any] = DEFAULT_RULES):
    """Shardings of ``tx.init(params)``: moments follow their parameter's
    sharding, scalars (step counts) are replicated."""
    import optax

    abstract = jax.eval_shape(tx.init, params)
    return optax.tree_map_params(
        tx, lambda _, s: s, abstract, state_shardings(params, mesh, rules),
        transform_non_params=lambda _: NamedSharding(mesh, P()), is_leaf=_is_variable)


def init_optimizer(tx, params: nnx.State, mesh: Mesh, rules: Mapping[str, Any] = DEFAULT_RULES):
    """``tx.init(params)`` created directly on its shardings (never on one device)."""
    return jax.jit(tx.init, out_shardings=optimizer_shardings(tx, params, mesh, rules))(params)


def state_logical_axes(state: nnx.State):
    return jax.tree.map(_variable_axes, state, is_leaf=_is_variable)


def shard_state(state: nnx.State, mesh: Mesh, rules: Mapping[str, Any] = DEFAULT_RULES):
    """Places every variable of ``state`` on its rule-given sharding."""
    return jax.device_put(state, state_shardings(state, mesh, rules))


def batch_sharding(mesh: Mesh, ndim: int, rules: Mapping[str, Any] = DEFAULT_RULES,
                   batch_size: int | None = None) -> NamedSharding:
    """Sharding of a [batch, ...] array: batch over the rules' 'batch' axes."""
    shape = (batch_size if batch_size is not None else
             math.prod(mesh.shape[a] for a in ("data", "fsdp")),) + (1,) * (ndim - 1)
    axes = ("batch",) + (None,) * (ndim - 1)
    return NamedSharding(mesh, logical_to_spec(axes, shape, mesh, rules))


# Activations: modules call constrain(x, axes); it is a no-op unless a mesh is
# active through `activation_sharding`, so models run unchanged without one.
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("crl_activation_mesh", default=None)


@contextlib.contextmanager
def activation_sharding(mesh: Mesh | None, rules: Mapping[str, Any] = DEFAULT_RULES):
    token = _ACTIVE.set(None if mesh is None else (mesh, rules))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def constrain(x, axes: Sequence[str | None]):
    active = _ACTIVE.get()
    if active is None:
        return x
    mesh, rules = active
    return jax.lax.with_sharding_constraint(
        x, NamedSharding(mesh, logical_to_spec(axes, x.shape, mesh, rules)))
