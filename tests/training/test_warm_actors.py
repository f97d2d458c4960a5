"""Entries of the warm-start cache name what their actor was trained from,
so a run that changes only the extractor's size or teaching reuses the actor."""
import os

import numpy as np
import safetensors.numpy

from crl_jax.training.components import build_run
from crl_jax.training.warm_actors import (ACTOR_INPUTS, actor_inputs_key, entry_with_actor,
                                          mark_actor)
from crl_jax.training.warm_cache import WarmStartCache, actor_key, warm_start_key
from tests.training.test_warm_cache import _cfg, _leaves


def test_the_actor_inputs_change_with_the_actor_and_not_with_the_extractor(tmp_path):
    base = actor_inputs_key(_cfg(tmp_path))
    for extractor_only in ("extractor.num_layers=3", "extractor.hidden_size=96",
                           "warm_start.extractor_steps=7", "warm_start.extractor_lr=0.01",
                           "warm_start.extractor_missteps=0.25"):
        cfg = _cfg(tmp_path, extractor_only)
        assert actor_inputs_key(cfg) == base, extractor_only
        assert warm_start_key(cfg) != warm_start_key(_cfg(tmp_path)), extractor_only
    for shaping in ("actor.num_layers=3", "warm_start.actor_steps=4", "warm_start.seed=1",
                    "rollout.history=1"):
        assert actor_inputs_key(_cfg(tmp_path, shaping)) != base, shaping


def _entry(root, key, actor=True):
    entry = WarmStartCache(root, key)
    os.makedirs(entry.path)
    if actor:
        safetensors.numpy.save_file({"w": np.zeros(2, np.float32)}, entry.weights("actor"))
    return entry


def test_an_entry_is_found_by_the_inputs_it_names(tmp_path):
    root = str(tmp_path / "cache")
    assert entry_with_actor(root, "actor-x") is None  # no cache yet
    with_actor, without = _entry(root, "a"), _entry(root, "b", actor=False)
    mark_actor(with_actor, "actor-x")
    mark_actor(without, "actor-x")  # no actor: nothing to name
    assert not os.path.exists(os.path.join(without.path, ACTOR_INPUTS))
    assert entry_with_actor(root, "actor-x") == "a"
    assert entry_with_actor(root, "actor-x", but="a") is None
    assert entry_with_actor(root, "actor-y") is None
    mark_actor(with_actor, "actor-y")  # renamed over, never appended
    assert entry_with_actor(root, "actor-x") is None and entry_with_actor(root, "actor-y") == "a"


def test_a_larger_extractor_trained_longer_reuses_the_actor(tmp_path, monkeypatch):
    """Neither actor_key's twin nor this run's own entry has the actor: the
    entry that names the same actor inputs gives it, and only the extractor
    trains."""
    from crl_jax.training import warm_stage

    first = build_run(_cfg(tmp_path), str(tmp_path / "a"))
    first.close()

    def no_training(*args, **kwargs):
        raise AssertionError("the actor was trained again")

    monkeypatch.setattr(warm_stage, "_train_actor", no_training)
    cfg = _cfg(tmp_path, "extractor.num_layers=3", "warm_start.extractor_steps=2")
    assert not WarmStartCache(str(tmp_path / "cache"), actor_key(cfg)).has("actor")
    second = build_run(cfg, str(tmp_path / "b"))
    second.close()
    assert second.warm_start_losses["actor"] == first.warm_start_losses["actor"]
    assert len(second.warm_start_losses["extractor"]) == 2
    for a, b in zip(_leaves(first.actor.params), _leaves(second.actor.params)):
        np.testing.assert_array_equal(a, b)
    assert len(second.extractor.model.layers) == 3
