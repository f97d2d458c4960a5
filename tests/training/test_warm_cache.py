"""The warm-start cache: arms of a comparison share one warm-started actor."""
import json
import os

import jax
import numpy as np
import pytest

from crl_jax.rl.learner import Learner
from crl_jax.training import setup
from crl_jax.training.components import build_run
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from crl_jax.training.warm_cache import (
    KEY_SCHEME,
    actor_key,
    WarmStartCache,
    key_in_scheme_of,
    load_params,
    recorded_warm_start,
    save_params,
    warm_start_key,
)
from tests.training.test_runs import SMALL


def _cfg(tmp_path, *extra):
    return apply_overrides(load_preset("alfworld_cpu"), SMALL + [
        f"warm_start.cache_dir={tmp_path / 'cache'}", "warm_start.actor_steps=3",
        "rollout.max_turns=30", *extra])  # demos long enough to win


def _leaves(params):
    return [np.asarray(x) for x in jax.tree.leaves(params)]


def test_second_run_loads_the_warm_start_and_modes_share_it(tmp_path, monkeypatch):
    first = build_run(_cfg(tmp_path), str(tmp_path / "a"))
    first.close()
    key = warm_start_key(first.cfg)
    entry = tmp_path / "cache" / key
    assert sorted(os.listdir(entry)) == ["actor.safetensors", "actor_inputs.txt",
                                         "extractor.safetensors", "losses.json", "tokenizer"]
    assert len(first.warm_start_losses["actor"]) == 3
    assert recorded_warm_start(str(tmp_path / "a")) == key  # the run says where it started

    def no_training(*args, **kwargs):
        raise AssertionError("the warm start ran although the cache holds it")

    monkeypatch.setattr(setup, "supervised_warm_start", no_training)
    for mode, out in (("comp_rl", "b"), ("none", "c")):  # the baseline shares the same entry
        cfg = _cfg(tmp_path, f"experience.mode={mode}")
        assert warm_start_key(cfg) == key
        again = build_run(cfg, str(tmp_path / out))
        for x, y in zip(_leaves(again.actor.params), _leaves(first.actor.params)):
            np.testing.assert_array_equal(x, y)
        assert again.warm_start_losses["actor"] == pytest.approx(first.warm_start_losses["actor"])
        assert again.tokenizer.encode("go to desk 1") == first.tokenizer.encode("go to desk 1")
        if mode == "comp_rl":
            for x, y in zip(_leaves(again.extractor.params), _leaves(first.extractor.params)):
                np.testing.assert_array_equal(x, y)
            again.close()


def test_a_resumed_run_keeps_the_warm_start_it_grew_from(tmp_path):
    """Its record names the warm start its checkpoint holds, even when this
    code would build another (figures compare records with today's key)."""
    from crl_jax.training.warm_cache import record_warm_start
    out = str(tmp_path / "run")
    record_warm_start(out, "alfworld_cpu-ws1-0123456789ab")
    build_run(_cfg(tmp_path, "experience.mode=none"), out, resume=True).close()
    assert recorded_warm_start(out) == "alfworld_cpu-ws1-0123456789ab"
    fresh = str(tmp_path / "fresh")
    cfg = _cfg(tmp_path, "experience.mode=none")
    build_run(cfg, fresh).close()
    assert recorded_warm_start(fresh) == warm_start_key(cfg)


def test_the_actor_is_in_the_cache_before_the_extractor_trains(tmp_path, monkeypatch):
    """A baseline waiting only on the actor starts while the extractor still trains."""
    cfg = _cfg(tmp_path)
    entry = tmp_path / "cache" / warm_start_key(cfg)
    real, seen = setup.supervised_warm_start, {}

    def noting_the_cache(learner, samples, lr, steps, batch, pad_id, rng, label, *args, **kwargs):
        seen[label] = sorted(p.name for p in entry.glob("*.safetensors")) if entry.exists() else []
        return real(learner, samples, lr, steps, batch, pad_id, rng, label, *args, **kwargs)

    monkeypatch.setattr(setup, "supervised_warm_start", noting_the_cache)
    run = build_run(cfg, str(tmp_path / "a"))
    run.close()
    assert seen == {"actor": [], "extractor": ["actor.safetensors"]}
    assert sorted(p.name for p in entry.glob("*.safetensors")) == ["actor.safetensors", "extractor.safetensors"]
    assert sorted(run.warm_start_losses) == ["actor", "extractor"]  # both curves kept
    assert sorted(json.loads((entry / "losses.json").read_text())) == ["actor", "extractor"]
    assert not (tmp_path / "cache" / "in_progress" / warm_start_key(cfg)).exists()
    # beside the entry, only its actor's twin (the preset's extractor settings
    # are not neutral): no progress or temporary directory is left behind
    twin = actor_key(cfg)
    assert twin != warm_start_key(cfg)
    assert sorted(os.listdir(tmp_path / "cache")) == sorted(["in_progress", warm_start_key(cfg), twin])
    assert sorted(p.name for p in (tmp_path / "cache" / twin).glob("*.safetensors")) == [
        "actor.safetensors"]


def test_adding_to_an_entry_never_takes_it_away(tmp_path):
    """The extractor joins the actor's entry file by file: the entry folder an
    arm may be loading the actor from stays in place (no temporary files left).
    An open file handle would read the old bytes either way, so the folder's
    identity is what the test checks."""
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "vocab.txt").write_text("a b")
    cache = WarmStartCache(str(tmp_path / "cache"), "k")
    cache.store(str(tok), {"actor": {"w": np.ones(3)}}, {"actor": [2.0, 1.0]})
    inode = os.stat(cache.path).st_ino
    cache.store(str(tok), {"extractor": {"w": np.zeros(2)}}, {"extractor": [3.0]})
    assert os.stat(cache.path).st_ino == inode  # the same folder, never renamed away
    assert sorted(os.listdir(cache.path)) == ["actor.safetensors", "extractor.safetensors", "losses.json", "tokenizer"]
    assert cache.losses() == {"actor": [2.0, 1.0], "extractor": [3.0]}
    like = {"w": jax.numpy.zeros(3)}
    np.testing.assert_array_equal(load_params(like, cache.weights("actor"))["w"], 1)


def test_key_changes_with_what_shapes_the_warm_start(tmp_path):
    base = warm_start_key(_cfg(tmp_path))
    assert warm_start_key(_cfg(tmp_path, "warm_start.seed=1")) != base
    assert warm_start_key(_cfg(tmp_path, "train.seed=1")) == base  # seeds share the warm start
    assert warm_start_key(_cfg(tmp_path, "warm_start.actor_steps=4")) != base
    assert warm_start_key(_cfg(tmp_path, "rollout.obs_chars=100")) != base
    assert warm_start_key(_cfg(tmp_path, "actor_optim.lr=0.1")) == base  # an RL setting
    assert warm_start_key(_cfg(tmp_path, "train.steps=7")) == base
    assert warm_start_key(_cfg(tmp_path, "env.num_eval_tasks=5")) == base
    # a later-added setting at its default keeps earlier keys; set, it changes them
    assert warm_start_key(_cfg(tmp_path, "warm_start.ask_fraction=0.0")) == base
    assert warm_start_key(_cfg(tmp_path, "warm_start.ask_fraction=0.2")) != base
    assert warm_start_key(_cfg(tmp_path, "env.seeded_clock=false")) == base
    assert warm_start_key(_cfg(tmp_path, "warm_start.split_digits=false")) == base
    assert warm_start_key(_cfg(tmp_path, "warm_start.split_digits=true")) != base  # other tokenizer
    assert warm_start_key(_cfg(tmp_path, "env.seeded_clock=true")) != base  # other expert games
    assert warm_start_key(_cfg(tmp_path, "rollout.max_turns=12")) != base  # shorter demos
    assert warm_start_key(_cfg(tmp_path, "env.lenient_actions=false")) != base  # other parser
    with pytest.raises(ValueError, match="ask_fraction must be in"):
        _cfg(tmp_path, "warm_start.ask_fraction=1.5")


def test_rl_seeds_start_from_the_same_warm_start_and_tasks(tmp_path):
    """train.seed drives RL only: without any cache, two seeds train the same
    warm start on the same game pools; warm_start.seed changes it."""
    def build(out, *extra):
        return build_run(apply_overrides(load_preset("alfworld_cpu"), SMALL + [
            "experience.mode=none", "warm_start.actor_steps=3", "rollout.max_turns=30",
            *extra]), str(tmp_path / out))

    a, b, c = build("a"), build("b", "train.seed=1"), build("c", "warm_start.seed=1")
    for x, y in zip(_leaves(a.actor.params), _leaves(b.actor.params)):
        np.testing.assert_array_equal(x, y)
    assert [s.tasks for s in a.eval_sources] == [s.tasks for s in b.eval_sources]
    assert [d.goal for d in a.demos] == [d.goal for d in b.demos]
    assert [d.goal for d in a.demos] != [d.goal for d in c.demos]  # another game pool


def test_a_killed_warm_start_continues_where_it_stopped(tmp_path, monkeypatch):
    """A warm start killed mid-way continues from its last save, and ends
    where an uninterrupted one does (same weights, same loss curve)."""
    steps = ["warm_start.actor_steps=5", "experience.mode=none"]
    ref = build_run(_cfg(tmp_path, *steps, f"warm_start.cache_dir={tmp_path / 'ref_cache'}"),
                  str(tmp_path / "ref"))
    cfg = _cfg(tmp_path, *steps)
    progress = tmp_path / "cache" / "in_progress" / warm_start_key(cfg) / "actor"

    monkeypatch.setattr(setup, "WARM_SAVE_EVERY", 2)
    real_step, calls = Learner.sft_step, []

    def dies_at_the_fourth(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt("killed")
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(Learner, "sft_step", dies_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        build_run(cfg, str(tmp_path / "a"))
    assert sorted(os.listdir(progress)) == ["2"]  # the save at step 2, not a partial 4
    assert not (tmp_path / "cache" / warm_start_key(cfg)).exists()

    calls.clear()
    monkeypatch.setattr(Learner, "sft_step", lambda self, *a, **k: (calls.append(1),
                                                                     real_step(self, *a, **k))[1])
    again = build_run(cfg, str(tmp_path / "a"))
    assert len(calls) == 3  # steps 3-5 only
    for x, y in zip(_leaves(again.actor.params), _leaves(ref.actor.params)):
        np.testing.assert_array_equal(x, y)
    assert again.warm_start_losses["actor"] == pytest.approx(ref.warm_start_losses["actor"],
                                                             rel=1e-6)
    assert not progress.parent.exists()  # stored in the cache, progress removed
    assert (tmp_path / "cache" / warm_start_key(cfg) / "actor.safetensors").exists()


def test_named_tensors_load_by_name_and_refuse_a_mismatch(tmp_path):
    path = str(tmp_path / "w.safetensors")
    save_params({"a": np.arange(3.0), "b": np.zeros(3)}, path)
    got = load_params({"b": jax.numpy.ones(3), "a": jax.numpy.ones(3)}, path)  # other order
    np.testing.assert_array_equal(got["a"], np.arange(3.0))
    np.testing.assert_array_equal(got["b"], 0)
    with pytest.raises(ValueError, match="missing.*'c'"):  # same shapes, other names
        load_params({"a": jax.numpy.ones(3), "c": jax.numpy.ones(3)}, path)
    with pytest.raises(ValueError, match="other shapes"):
        load_params({"a": jax.numpy.ones(4), "b": jax.numpy.ones(3)}, path)


def test_records_of_the_older_key_scheme_are_checked_in_that_scheme(tmp_path):
    """A figure record made before WarmStartInputs holds a key of the older
    scheme: it is compared with today's settings in that scheme, so it stays
    current until a setting it was made with changes."""
    from crl_jax.training.config_io import save_config_json
    from crl_jax.training.warm_cache import legacy_warm_start_key, record_warm_start
    from experiments.figures import common
    arm = common.Arm("baseline", "alfworld_cpu", ("experience.mode=none",), 0)
    cfg = common.arm_config(arm)
    old = legacy_warm_start_key(cfg)
    assert f"-{KEY_SCHEME}-" not in old and old.startswith("alfworld_cpu-")
    assert key_in_scheme_of(old, cfg) == old
    assert key_in_scheme_of(warm_start_key(cfg), cfg) == warm_start_key(cfg)
    run = common.run_dir(arm, str(tmp_path))
    os.makedirs(run)
    save_config_json(cfg, os.path.join(run, "config.json"))
    record_warm_start(run, old)
    assert common.stale_settings(arm, run) == []
    changed = common.Arm("baseline", "alfworld_cpu", ("experience.mode=none",
                                                      "warm_start.actor_steps=5"), 0)
    assert legacy_warm_start_key(common.arm_config(changed)) != old


def test_a_key_of_an_earlier_scheme_is_not_current(tmp_path):
    """A record keyed "<preset>-ws<older>-<hash>" was made by warm-start code
    that gave other results for the same inputs: it never matches today."""
    cfg = _cfg(tmp_path)
    today = warm_start_key(cfg)
    older = today.replace(f"-{KEY_SCHEME}-", "-ws1-")
    assert key_in_scheme_of(older, cfg) == today != older


def test_minihack_rooms_use_the_later_key_scheme_and_the_others_keep_theirs():
    """MiniHack rooms' guided demos changed (ws8); ALFWorld's did not, so its
    warm starts and the records made from them stay current (ws7)."""
    alfworld = warm_start_key(load_preset("alfworld_cpu"))
    room = warm_start_key(load_preset("minihack_room_cpu"))
    assert f"-{KEY_SCHEME}-" in alfworld and KEY_SCHEME == "ws7"
    assert "-ws8-" in room and key_in_scheme_of(room, load_preset("minihack_room_cpu")) == room
    assert "-ws8-" in warm_start_key(load_preset("multitask3_cpu")) or not any(
        n.startswith("MiniHack-Room-") for n in load_preset("multitask3_cpu").env.names)


def test_an_actor_only_run_leaves_another_runs_extractor_progress(tmp_path):
    """A baseline or oracle arm loads the cached actor while another process
    still trains the extractor of that key: the extractor's saved progress
    stays (it used to be removed with the key's whole progress directory)."""
    cfg = _cfg(tmp_path, "experience.mode=none")
    build_run(cfg, str(tmp_path / "first")).close()  # the actor reaches the cache
    progress = tmp_path / "cache" / "in_progress" / warm_start_key(cfg) / "extractor" / "50"
    progress.mkdir(parents=True)
    build_run(cfg, str(tmp_path / "second")).close()
    assert progress.is_dir()


def test_the_committed_records_keep_their_warm_start_keys():
    """Settings added since a key scheme (warm_start.judge_fraction and
    extractor_missteps, the models' attention_chunk) stay out of both key schemes at their neutral
    values: the warm starts the committed figure records grew from keep
    their keys (a changed key makes every record of the preset stale, so
    a change here must be deliberate, with the records rerun). alfworld_cpu's
    changed deliberately when its extractor warm start began to show
    missteps (extractor_missteps=0.5, docs/FINDINGS.md, "Extractor missteps";
    the runs that load the extractor were made again)."""
    from experiments.configs import load_preset
    from crl_jax.training.warm_cache import legacy_warm_start_key

    want = {"alfworld_cpu": ("alfworld_cpu-ws7-46d406a65d1456ea", "alfworld_cpu-031ec4a790db9e06"),
            "minihack_room_cpu": ("minihack_room_cpu-ws8-7d8e5e816ddd7c68",
                                  "minihack_room_cpu-9c574a7291776692"),
            "multitask3_cpu": ("multitask3_cpu-ws8-83cb36c2fdd707fc",
                               "multitask3_cpu-cce8ae3fa60896db")}
    for name, (key, legacy) in want.items():
        cfg = load_preset(name)
        assert (warm_start_key(cfg), legacy_warm_start_key(cfg)) == (key, legacy), name


def test_the_key_history_of_preset_pools_matches_every_preset():
    # The warm-start key leaves an RL pool out of its hash where it is the one
    # the preset had when the pool joined the key; the library keeps that as a
    # table (it reads no presets). A preset whose pool differs from its entry
    # would change its keys, and every record made from it would go stale.
    from crl_jax.training.warm_cache import PRESET_POOLS_AT_SCHEME, _pool_excluded
    from experiments.configs import PRESETS

    assert sorted(PRESET_POOLS_AT_SCHEME) == PRESETS.names()
    for name in PRESETS.names():
        for profile in PRESETS.profiles(name) or ("",):
            cfg = PRESETS.load(f"{name}:{profile}" if profile else name)
            assert _pool_excluded(cfg) == PRESET_POOLS_AT_SCHEME[name], (name, profile)


def test_a_new_entry_adopts_the_actor_of_the_entry_with_the_same_actor_inputs(tmp_path):
    """adopt_actor copies tokenizer, actor and the actor's loss curve; never
    over an actor the entry has, nor from an entry without one; and the key
    it adopts from is the one whose extractor-only settings are neutral."""
    import safetensors.numpy

    from crl_jax.training.warm_cache import WarmStartCache, actor_key, adopt_actor
    root = str(tmp_path / "cache")
    source = WarmStartCache(root, "old")
    os.makedirs(os.path.join(source.path, "tokenizer"))
    with open(os.path.join(source.path, "tokenizer", "tokenizer.json"), "w") as f:
        f.write("{}")
    safetensors.numpy.save_file({"w": np.arange(3, dtype=np.float32)}, source.weights("actor"))
    with open(os.path.join(source.path, "losses.json"), "w") as f:
        json.dump({"actor": [2.0, 1.0], "extractor": [3.0]}, f)
    new = WarmStartCache(root, "new")
    assert adopt_actor(new, "old") and new.has("actor") and not new.has("extractor")
    assert new.losses() == {"actor": [2.0, 1.0]} and new.tokenizer_dir()
    assert list(safetensors.numpy.load_file(new.weights("actor"))["w"]) == [0, 1, 2]
    assert not adopt_actor(new, "old")  # it has an actor now
    assert not adopt_actor(WarmStartCache(root, "other"), "missing")
    assert not adopt_actor(source, "old")
    cfg = _cfg(tmp_path, "warm_start.extractor_missteps=0.5")
    neutral = _cfg(tmp_path, "warm_start.extractor_missteps=0")
    assert actor_key(cfg) == actor_key(neutral) == warm_start_key(neutral) != warm_start_key(cfg)


def test_a_trained_actor_reaches_the_entry_other_extractor_settings_adopt_from(tmp_path,
                                                                                monkeypatch):
    """A run whose extractor-only settings are not neutral (as a preset's may
    be) trains the actor under its own key; the entry every arm with other
    extractor settings adopts from (actor_key) gets the same actor, so the
    second arm trains its extractor alone."""
    from crl_jax.training import warm_stage

    cfg = _cfg(tmp_path, "experience.mode=none", "warm_start.extractor_wrong_picks=0.25")
    first = build_run(cfg, str(tmp_path / "a"))
    first.close()
    twin = WarmStartCache(str(tmp_path / "cache"), actor_key(cfg))
    assert twin.key != warm_start_key(cfg) and twin.has("actor") and twin.tokenizer_dir()

    def no_training(*args, **kwargs):
        raise AssertionError("the actor was trained again")

    monkeypatch.setattr(warm_stage, "_train_actor", no_training)
    other = _cfg(tmp_path, "experience.mode=none", "warm_start.extractor_missteps=0.5")
    second = build_run(other, str(tmp_path / "b"))
    second.close()
    assert second.warm_start_losses.get("actor") == first.warm_start_losses["actor"]
    for a, b in zip(_leaves(first.actor.params), _leaves(second.actor.params)):
        np.testing.assert_array_equal(a, b)
