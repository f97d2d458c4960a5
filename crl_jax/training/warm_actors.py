"""Which warm-start cache entries hold which actor.

A warm-started actor is trained from its demonstrations, tokenizer and
settings alone: the extractor's model, its warm-start steps and learning
rate and the extractor-only settings (``EXTRACTOR_ONLY_WARM_START``) never
reach it (the extractor has its own initial seed and its own generator,
warm_stage._train_extractor). ``actor_key`` finds the entry of the same run
with those settings neutral, which is enough when only the extractor-only
settings differ; a run that also changes the extractor's size or steps has
no such entry. So each entry that holds an actor also names, in a small
file, the hash of what that actor was trained from (``actor_inputs_key``),
and a new entry adopts the actor of any entry that names the same hash.

    <cache_dir>/<key>/actor_inputs.txt     that hash

An entry gets the file when its actor is stored or loaded by a run, so
entries made before this file existed gain it the first time a run uses them.
"""
from __future__ import annotations

import dataclasses
import os

from crl_jax.training.config import RunConfig
from crl_jax.training.warm_cache import (WarmStartCache, extractor_neutral, replace_file,
                                         warm_start_key)

ACTOR_INPUTS = "actor_inputs.txt"

# What teaches the extractor alone besides EXTRACTOR_ONLY_WARM_START, at one
# fixed value: the hash then changes with what shapes the actor only.
_EXTRACTOR_TEACHING = {"extractor_steps": 0, "extractor_lr": 0.0}


def actor_inputs_key(cfg: RunConfig) -> str:
    """The hash of what ``cfg``'s warm-started actor is trained from: its
    warm-start key with the extractor's model and teaching set to one value."""
    neutral = dataclasses.replace(extractor_neutral(cfg, **_EXTRACTOR_TEACHING),
                                  extractor=cfg.actor)
    return "actor-" + warm_start_key(neutral)


def mark_actor(cache: WarmStartCache, actor_inputs: str) -> None:
    """Names ``actor_inputs`` in ``cache``'s entry, which holds an actor."""
    path = os.path.join(cache.path, ACTOR_INPUTS)
    if not cache.has("actor") or _read(path) == actor_inputs:
        return
    replace_file(cache.path, ACTOR_INPUTS, lambda p: _write(p, actor_inputs))


def entry_with_actor(root: str, actor_inputs: str, but: str = "") -> str | None:
    """The key of an entry under ``root`` (not ``but``) that holds an actor
    trained from ``actor_inputs``; None when there is none."""
    if not os.path.isdir(root):
        return None
    for key in sorted(os.listdir(root)):
        entry = WarmStartCache(root, key)
        if (key != but and not key.startswith(".") and entry.has("actor")
                and _read(os.path.join(entry.path, ACTOR_INPUTS)) == actor_inputs):
            return key
    return None


def _read(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read().strip()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text + "\n")
