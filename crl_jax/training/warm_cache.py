"""A cache of warm starts (tokenizer + supervised weights of the tiny models).

Every arm of a comparison (baseline, Comp. RL, ablations) should start from
the same warm-started actor, and the warm start is the slowest part of a
short CPU run; with ``warm_start.cache_dir`` set, the first run of a setting
stores its tokenizer and weights under a key of everything that shapes them
(model specs, environment, prompt rendering, warm-start settings, seed), and
later runs with the same key load them instead of training again.

    <cache_dir>/<key>/tokenizer/...       the environment tokenizer
    <cache_dir>/<key>/actor.npz           parameter leaves in tree order
    <cache_dir>/<key>/extractor.npz       (when an extractor was trained)
    <cache_dir>/<key>/losses.json         the warm-start loss curves

Entries are written to a temporary directory and renamed, so a crash never
leaves a half-written entry behind.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile

import jax
import numpy as np

from crl_jax.training.config_io import config_to_dict


# Settings added after keys were in use, per config section, with their
# defaults: at the default they stay out of the key, so earlier cache entries
# still match. Evaluation settings and the cache's own place never shape it.
_ADDED_LATER = {"env": {"seeded_clock": False},
                "warm_start": {"ask_fraction": 0.0, "split_digits": False}}
_NOT_SHAPING = {"env": ("num_eval_tasks", "eval_split"), "warm_start": ("cache_dir",)}


def _shaping(section: str, spec) -> dict:
    """The settings of one config section that shape the warm start."""
    later = _ADDED_LATER.get(section, {})
    return {k: v for k, v in config_to_dict(spec).items()
            if k not in _NOT_SHAPING.get(section, ()) and not (k in later and v == later[k])}


def warm_start_key(cfg) -> str:
    """A hash of the config parts that determine the warm start (not the RL
    settings, not the experience mode: all arms share one warm start)."""
    r = cfg.rollout
    parts = {
        "actor": config_to_dict(cfg.actor), "extractor": config_to_dict(cfg.extractor),
        "env": _shaping("env", cfg.env),
        "prompt": [r.format, r.history, r.list_actions, r.obs_chars, r.show_first_observation],
        "warm_start": _shaping("warm_start", cfg.warm_start),
        "version": 5,  # bump when the warm-start data changes (warm_start.seed is in its dict)
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return f"{cfg.name}-{hashlib.sha256(blob).hexdigest()[:16]}"


RECORD = "warm_start.json"  # in a run directory: the cache key it started from


def record_warm_start(run_dir: str, key: str) -> None:
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, RECORD), "w") as f:
        json.dump({"key": key}, f)


def recorded_warm_start(run_dir: str) -> str | None:
    """The warm-start key a run recorded, None for runs that predate the record."""
    path = os.path.join(run_dir, RECORD)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f).get("key")


def _save_leaves(params, path: str) -> None:
    leaves = [np.asarray(x) for x in jax.tree.leaves(params)]
    np.savez(path, **{str(i): x for i, x in enumerate(leaves)})


def _write_json(obj, path: str) -> None:
    with open(path, "w") as f:
        json.dump(obj, f)


def _replace_file(folder: str, name: str, write) -> None:
    """Writes ``folder/name`` through a hidden temporary file (``write(path)``)
    renamed over it: readers see the old file or the new, never part of one."""
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp{os.path.splitext(name)[1]}")
    try:
        write(tmp)
        os.replace(tmp, os.path.join(folder, name))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_leaves(like, path: str):
    """The stored leaves, in the tree structure (and shardings) of ``like``."""
    with np.load(path) as data:
        leaves = [data[str(i)] for i in range(len(data.files))]
    ref, treedef = jax.tree.flatten(like)
    if len(leaves) != len(ref) or any(a.shape != b.shape for a, b in zip(leaves, ref)):
        raise ValueError(f"warm-start cache entry {path} does not match the model "
                         f"({len(leaves)} stored leaves vs {len(ref)})")
    placed = [jax.device_put(x.astype(r.dtype), r.sharding) for x, r in zip(leaves, ref)]
    return jax.tree.unflatten(treedef, placed)


@dataclasses.dataclass
class WarmStartCache:
    root: str
    key: str

    @property
    def path(self) -> str:
        return os.path.join(self.root, self.key)

    def has(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.path, f"{name}.npz"))

    def tokenizer_dir(self) -> str | None:
        d = os.path.join(self.path, "tokenizer")
        return d if os.path.isdir(d) else None

    def losses(self) -> dict:
        p = os.path.join(self.path, "losses.json")
        if not os.path.exists(p):
            return {}
        with open(p) as f:
            return json.load(f)

    def store(self, tokenizer_dir: str, weights: dict, losses: dict) -> None:
        """Adds ``weights`` (name -> params) to the entry. A new entry appears
        whole (built aside, then renamed into place); an existing one gains
        each file by an atomic rename, so an arm loading the actor while this
        run adds the extractor never finds the entry missing."""
        os.makedirs(self.root, exist_ok=True)
        merged = {**self.losses(), **{k: [float(x) for x in v] for k, v in losses.items()}}
        if os.path.isdir(self.path):
            for name, params in weights.items():
                _replace_file(self.path, f"{name}.npz", lambda p, w=params: _save_leaves(w, p))
            _replace_file(self.path, "losses.json", lambda p: _write_json(merged, p))
            return
        tmp = tempfile.mkdtemp(prefix=f".{self.key}.", dir=self.root)
        try:
            shutil.copytree(tokenizer_dir, os.path.join(tmp, "tokenizer"))
            for name, params in weights.items():
                _save_leaves(params, os.path.join(tmp, f"{name}.npz"))
            _write_json(merged, os.path.join(tmp, "losses.json"))
            try:
                os.replace(tmp, self.path)
            except OSError:
                if not os.path.isdir(self.path):
                    raise
                self.store(tokenizer_dir, weights, losses)  # another run made the entry meanwhile
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
