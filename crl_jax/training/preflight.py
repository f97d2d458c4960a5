"""Preflight: what keeps a run's configuration from running on this machine,
found in seconds, before the run directory is made or a model loads.

At paper scale a missing checkpoint used to surface after the first model
had loaded (minutes), as a traceback, leaving a run directory behind. Here
every problem is one line that names the key as the command line does
(``--actor.checkpoint=...``) and the fix, all of them at once:

- checkpoints (actor, extractor, embedder): the directory exists and holds a
  config.json of an architecture this project loads, *.safetensors weights
  and a tokenizer;
- environments: known names, and the ALFWorld games each pack split needs;
- devices: each role's first:N / last:N fits this host, and two roles that
  asked for devices of their own do not share any.

Settings that are wrong on every machine (a dtype, a device string's form, a
split name) are the configuration's own checks (crl_jax/training/config.py)
and fail while the command line is parsed. The training command runs this
before every run; ``--preflight`` runs it alone.
"""
from __future__ import annotations

import json
import os

from crl_jax.training.config import ModelSpec, RunConfig

GUIDE = 'BUILD.md "Paper scale in five steps"'
# The embedders built into the project (crl_jax/training/setup.py make_embedder).
BUILTIN_EMBEDDERS = ("hashing", "minilm")


def problems(cfg: RunConfig, device_count: int | None = None) -> list[str]:
    """Every problem found, one line each (empty: ready to run).
    ``device_count``: the devices of this host, None to skip the device
    checks (a multi-process job checks them once JAX has joined the job)."""
    found = []
    for role in ("actor", "extractor"):
        if role == "extractor" and not cfg.experience.has_extractor:
            continue
        found += model_problems(role, getattr(cfg, role))
    embedder = cfg.experience.embedder
    if cfg.experience.retrieves and embedder not in BUILTIN_EMBEDDERS:
        found += checkpoint_problems("experience.embedder", embedder)
    found += env_problems(cfg)
    if device_count is not None:
        found += device_problems(cfg, device_count)
    return found


def model_problems(role: str, spec: ModelSpec) -> list[str]:
    """A role's checkpoint and tokenizer (a tiny model from scratch needs neither)."""
    found = checkpoint_problems(f"{role}.checkpoint", spec.checkpoint) if spec.checkpoint else []
    if spec.tokenizer and not _tokenizer_at(spec.tokenizer):
        found.append(f"--{role}.tokenizer={spec.tokenizer}: no tokenizer there (a directory "
                     "with tokenizer.json or tokenizer.model, or a .model file)")
    return found


def checkpoint_problems(key: str, path: str) -> list[str]:
    """A Hugging Face checkpoint directory this project can load."""
    if not os.path.isdir(path):
        return [f"--{key}={path}: no such directory; put the checkpoint there ({GUIDE}, step 2) "
                f"or pass --{key}=DIR"]
    found = []
    config = os.path.join(path, "config.json")
    if not os.path.isfile(config):
        found.append(f"--{key}={path}: no config.json (a Hugging Face checkpoint directory "
                     "holds config.json, *.safetensors and tokenizer files)")
    else:
        from models.config import load_hf_config
        try:
            load_hf_config(path)
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as err:
            found.append(f"--{key}={path}: its config.json is not an architecture this project "
                         f"loads (llama, qwen2, qwen3): {err}")
    if not any(name.endswith(".safetensors") for name in os.listdir(path)):
        found.append(f"--{key}={path}: no *.safetensors weights (download the whole "
                     "repository, not only its config)")
    if not _tokenizer_at(path):
        found.append(f"--{key}={path}: no tokenizer.json or tokenizer.model")
    return found


def _tokenizer_at(path: str) -> bool:
    if os.path.isdir(path):
        return any(os.path.isfile(os.path.join(path, f))
                   for f in ("tokenizer.json", "tokenizer.model"))
    return os.path.isfile(path) and path.endswith(".model")


def env_problems(cfg: RunConfig) -> list[str]:
    """Known environment names; the ALFWorld games of each pack split."""
    from crl_jax.envs.registry import env_names

    known = env_names()
    found = [f"--env.names={','.join(cfg.env.names)}: {name!r} is not an environment; valid: "
             f"{', '.join(sorted(known))}" for name in cfg.env.names if name not in known]
    if any(name.startswith("alfworld") for name in cfg.env.names):
        from crl_jax.envs.alfworld_data import SPLITS, data_root, pack_path, pack_available

        for key in ("train_split", "eval_split"):
            split = getattr(cfg.env, key)
            if split in SPLITS and not pack_available(split) and data_root() is None:
                found.append(f"--env.{key}={split}: no ALFWorld games for it: neither the pack "
                             f"{pack_path(split)} nor $ALFWORLD_DATA exists ({GUIDE}, step 3; "
                             "$CRL_ALFWORLD_PACK names another pack folder)")
    return found


def role_device_ids(spec: str, count: int) -> range:
    """The device indices of a role's devices string on a host of ``count``."""
    if spec == "all":
        return range(count)
    kind, _, n = spec.partition(":")
    return range(int(n)) if kind == "first" else range(count - int(n), count)


def device_problems(cfg: RunConfig, count: int) -> list[str]:
    """Each role's devices exist here; roles that asked for devices of their
    own ("first:N", "last:N") get disjoint ones."""
    roles = ("actor", "extractor") if cfg.experience.has_extractor else ("actor",)
    found = []
    for role in roles:
        spec = getattr(cfg, role).devices
        if spec != "all" and int(spec.partition(":")[2]) > count:
            found.append(f"--{role}.devices={spec}: this host has {count} device"
                         f"{'s' if count != 1 else ''}")
    if found or len(roles) == 1:
        return found
    a, e = cfg.actor.devices, cfg.extractor.devices
    if a == e == "all":
        return found  # both roles on every device, in turn: a layout of its own
    shared = set(role_device_ids(a, count)) & set(role_device_ids(e, count))
    if shared:
        found.append(f"--actor.devices={a} and --extractor.devices={e} share {len(shared)} of "
                     f"this host's {count} devices; give each role its own (first:N and last:M "
                     f"with N + M <= {count}), or all for both to take turns on every device")
    return found


def report(found: list[str]) -> str:
    """The lines a failed preflight prints."""
    head = f"preflight: {len(found)} problem{'s' if len(found) != 1 else ''}"
    return "\n".join([head, *(f"- {line}" for line in found)])
