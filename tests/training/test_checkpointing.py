"""Tests for crl_jax.training.checkpointing.RunCheckpointer (Orbax), on 8 fake CPU devices."""

from __future__ import annotations

import os
import random

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from crl_jax.training import checkpointing as ck


def _write_bank(contents: str):
    """A file callback like the experience bank's: writes a directory at path."""
    def write(path):
        os.makedirs(path)
        with open(os.path.join(path, "index.bin"), "w") as f:
            f.write(contents)
    return write


def _params(seed: int):
    rng = np.random.default_rng(seed)
    return {
        "w": jnp.asarray(rng.normal(size=(8, 4)), jnp.float32),
        "b": jnp.asarray(rng.normal(size=(4,)), jnp.bfloat16),
    }


def _assert_tree_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(np.asarray(x, np.float32), np.asarray(y, np.float32))


def test_round_trip_of_trees_host_state_and_files(tmp_path):
    params = _params(0)
    tx = optax.adamw(1e-3)
    opt_state = tx.init(params)
    grads = jax.tree.map(jnp.ones_like, params)
    _, opt_state = tx.update(grads, opt_state, params)
    key = jax.random.key(42)
    py_rng = random.Random(7)
    py_rng.random()
    host = {"step": 3, "iterator": {"epoch": 1, "position": 17},
            "python_rng": ck.python_rng_state_to_json(py_rng.getstate())}

    with ck.RunCheckpointer(str(tmp_path / "ckpt")) as saver:
        saver.save(3, {"actor": params, "actor_opt": opt_state, "rng": {"key": key}},
                   host_state=host, files={"bank": _write_bank("bank@3")})
        host["step"] = 999  # mutating after save must not change the checkpoint
        assert saver.latest_step() == 3

    with ck.RunCheckpointer(str(tmp_path / "ckpt")) as loader:
        targets = {"actor": params, "actor_opt": opt_state, "rng": {"key": key}}
        restored = loader.restore(targets=targets)
    assert restored.step == 3
    _assert_tree_equal(restored.trees["actor"], params)
    _assert_tree_equal(restored.trees["actor_opt"], opt_state)  # namedtuples kept
    np.testing.assert_array_equal(jax.random.key_data(restored.trees["rng"]["key"]),
                                  jax.random.key_data(key))
    assert jax.random.uniform(restored.trees["rng"]["key"]) == jax.random.uniform(key)
    assert restored.host_state["step"] == 3
    assert restored.host_state["iterator"] == {"epoch": 1, "position": 17}
    again = random.Random()
    again.setstate(ck.python_rng_state_from_json(restored.host_state["python_rng"]))
    assert again.random() == py_rng.random()
    bank = restored.files["bank"]
    assert bank.startswith(str(tmp_path / "ckpt" / "3"))
    assert open(os.path.join(bank, "index.bin")).read() == "bank@3"


def test_restore_lands_on_target_shardings(tmp_path):
    mesh = jax.make_mesh((8,), ("data",))
    saved_sharding = NamedSharding(mesh, P("data", None))
    value = np.arange(64, dtype=np.float32).reshape(16, 4)
    tree = {"w": jax.device_put(value, saved_sharding)}
    with ck.RunCheckpointer(str(tmp_path)) as saver:
        saver.save(1, {"actor": tree})
        # A different layout on a 2x4 mesh, as after changing the parallelism.
        mesh2 = jax.make_mesh((2, 4), ("fsdp", "tp"))
        target_sharding = NamedSharding(mesh2, P("tp", "fsdp"))
        target = {"w": jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=target_sharding)}
        restored = saver.restore(1, targets={"actor": target}).trees["actor"]["w"]
        assert restored.sharding == target_sharding
        assert len(restored.addressable_shards) == 8
        assert restored.addressable_shards[0].data.shape == (4, 2)
        np.testing.assert_array_equal(np.asarray(restored), value)
        # Without a target, arrays come back on the sharding they were saved with.
        untargeted = saver.restore(1).trees["actor"]["w"]
        assert untargeted.sharding.spec == saved_sharding.spec
        np.testing.assert_array_equal(np.asarray(untargeted), value)


def test_keeps_last_n_and_restores_a_given_step(tmp_path):
    with ck.RunCheckpointer(str(tmp_path), keep=2) as saver:
        for step in (10, 20, 30):
            saver.save(step, {"p": {"x": jnp.full((2,), float(step))}},
                       host_state={"step": step}, files={"bank": _write_bank(f"b{step}")})
        assert saver.all_steps() == [20, 30] and saver.latest_step() == 30
        old = saver.restore(20)
        assert old.host_state == {"step": 20}
        np.testing.assert_array_equal(np.asarray(old.trees["p"]["x"]), [20.0, 20.0])
        assert open(os.path.join(old.files["bank"], "index.bin")).read() == "b20"
        with pytest.raises(FileNotFoundError, match=r"step 10.*\[20, 30\]"):
            saver.restore(10)


def test_interrupted_save_leaves_previous_checkpoint_latest(tmp_path):
    directory = str(tmp_path / "run")
    saver = ck.RunCheckpointer(directory)
    saver.save(1, {"p": {"x": jnp.ones(3)}}, host_state={"step": 1},
               files={"bank": _write_bank("good")})

    def crash_mid_write(path):
        with open(path, "w") as f:
            f.write("half a bank")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        saver.save(2, {"p": {"x": jnp.zeros(3)}}, host_state={"step": 2},
                   files={"ok": _write_bank("fine"), "bank": crash_mid_write})
    assert saver.latest_step() == 1
    assert sorted(os.listdir(directory)) == ["1"]  # no staging or tmp leftovers
    saver.close()

    # A save killed inside Orbax leaves a temporary step directory behind.
    os.makedirs(os.path.join(directory, "2.orbax-checkpoint-tmp-123", "p"))
    with ck.RunCheckpointer(directory) as reopened:
        assert reopened.latest_step() == 1
        restored = reopened.restore()
        assert restored.host_state == {"step": 1}
        np.testing.assert_array_equal(np.asarray(restored.trees["p"]["x"]), np.ones(3))
        assert open(os.path.join(restored.files["bank"], "index.bin")).read() == "good"
        reopened.save(2, {"p": {"x": jnp.zeros(3)}}, host_state={"step": 2})
        assert reopened.latest_step() == 2 and reopened.restore().files == {}


def test_clear_errors(tmp_path):
    with ck.RunCheckpointer(str(tmp_path)) as saver:
        with pytest.raises(FileNotFoundError, match="No checkpoint"):
            saver.restore()
        assert saver.latest_step() is None
        with pytest.raises(ValueError, match="JSON-serialisable"):
            saver.save(1, {"p": {"x": jnp.ones(1)}}, host_state={"bad": object()})
        with pytest.raises(ValueError, match="letters, digits"):
            saver.save(1, {"actor params": {"x": jnp.ones(1)}})
        with pytest.raises(ValueError, match="wrote nothing"):
            saver.save(1, {"p": {"x": jnp.ones(1)}}, files={"bank": lambda path: None})
        assert saver.latest_step() is None
        saver.save(1, {"p": {"x": jnp.ones(1)}})
        with pytest.raises(ValueError, match="already exists"):
            saver.save(1, {"p": {"x": jnp.ones(1)}})
        with pytest.raises(ValueError, match=r"\['q'\].*\['p'\]"):
            saver.restore(targets={"q": {"x": jnp.ones(1)}})
    with pytest.raises(ValueError, match="keep"):
        ck.RunCheckpointer(str(tmp_path), keep=0)
