"""The same model in every mesh layout on 8 fake CPU devices: same logits,
same loss, same parameters after one AdamW step."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from models.checkpoint import load_checkpoint, save_checkpoint
from models.config import tiny_config
from models.decoder import init_decoder
from models.sharding import (MeshConfig, activation_sharding, batch_sharding, init_optimizer,
                             logical_to_spec, make_mesh, shard_state, state_shardings)

pytestmark = pytest.mark.skipif(len(jax.devices()) < 8, reason="needs 8 (fake) devices")

LAYOUTS = {
    "single": (MeshConfig(data=1, fsdp=1, tp=1), 1),
    "data_parallel": (MeshConfig(data=8, fsdp=1, tp=1), 8),
    "fsdp": (MeshConfig(data=1, fsdp=8, tp=1), 8),
    "fsdp_x_tp": (MeshConfig(data=1, fsdp=4, tp=2), 8),
    "dp_fsdp_tp": (MeshConfig(data=2, fsdp=2, tp=2), 8),
}
CFG = tiny_config("qwen2", vocab_size=128, hidden_size=32, intermediate_size=64)


def _batch():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 128, size=(8, 24)).astype(np.int32)
    mask = np.ones((8, 24), bool)
    mask[::3, :5] = False  # some left padding
    return tokens, mask


def _loss(model, tokens, mask):
    logits, _ = model(tokens, input_mask=mask)
    logp = jax.nn.log_softmax(logits[:, :-1])
    nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], -1)[..., 0]
    w = (mask[:, 1:] & mask[:, :-1]).astype(jnp.float32)
    return (nll * w).sum() / w.sum(), logits


def _run(layout):
    mesh_cfg, n = LAYOUTS[layout]
    mesh = make_mesh(mesh_cfg, jax.devices()[:n])
    model = init_decoder(CFG, seed=0)
    graphdef, params = nnx.split(model, nnx.Param)
    params = shard_state(params, mesh)
    tx = optax.adamw(1e-2)
    opt_state = init_optimizer(tx, params, mesh)
    tokens, mask = _batch()
    tokens = jax.device_put(tokens, batch_sharding(mesh, 2))
    mask = jax.device_put(mask, batch_sharding(mesh, 2))

    @jax.jit
    def step(params, opt_state, tokens, mask):
        with activation_sharding(mesh):
            (loss, logits), grads = jax.value_and_grad(
                lambda p: _loss(nnx.merge(graphdef, p), tokens, mask), has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, logits, grads

    new_params, opt_state, loss, logits, grads = step(params, opt_state, tokens, mask)
    return mesh, grads, new_params, opt_state, float(loss), np.asarray(logits)


@pytest.fixture(scope="module")
def reference():
    return _run("single")


@pytest.mark.parametrize("layout", ["data_parallel", "fsdp", "fsdp_x_tp", "dp_fsdp_tp"])
def test_layout_matches_single_device(reference, layout):
    _, ref_grads, ref_params, _, ref_loss, ref_logits = reference
    mesh, grads, new_params, opt_state, loss, logits = _run(layout)
    np.testing.assert_allclose(logits, ref_logits, atol=2e-5)
    assert abs(loss - ref_loss) < 1e-5
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    # Adam divides by sqrt(v): where a gradient is ~1e-9, reduction-order noise
    # becomes a visible fraction of the step (lr = 1e-2), hence 1e-4 here.
    for a, b in zip(jax.tree.leaves(new_params), jax.tree.leaves(ref_params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4)
    # Parameters and optimizer moments really are distributed as the rules say.
    q = new_params["layers"][0]["attn"]["q_proj"]["kernel"]
    want = {"data_parallel": P(None, None), "fsdp": P("fsdp", None),
            "fsdp_x_tp": P("fsdp", "tp"), "dp_fsdp_tp": P("fsdp", "tp")}[layout]
    assert q.sharding.is_equivalent_to(NamedSharding(mesh, want), 2)
    mu = opt_state[0].mu["layers"][0]["attn"]["q_proj"]["kernel"]
    assert mu.sharding.is_equivalent_to(NamedSharding(mesh, want), 2)


def test_init_on_mesh_equals_unsharded_init():
    mesh = make_mesh(MeshConfig(data=1, fsdp=4, tp=2))
    a = nnx.state(init_decoder(CFG, seed=5, mesh=mesh), nnx.Param)
    b = nnx.state(init_decoder(CFG, seed=5), nnx.Param)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        # Same random draws; the jitted init may round the scaling 1 ulp apart.
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-8)
    emb = a["embed"]["embedding"]
    assert emb.sharding.is_equivalent_to(NamedSharding(mesh, P("tp", "fsdp")), 2)


def test_checkpoint_loads_straight_onto_mesh(tmp_path):
    model = init_decoder(CFG.replace(scan_layers=True), seed=1)
    save_checkpoint(model, str(tmp_path))
    mesh = make_mesh(MeshConfig(data=1, fsdp=4, tp=2))
    for scan in (True, False):
        loaded = load_checkpoint(str(tmp_path), mesh=mesh, scan_layers=scan)
        shardings = state_shardings(nnx.state(loaded, nnx.Param), mesh)
        for v, s in zip(jax.tree.leaves(nnx.state(loaded, nnx.Param)), jax.tree.leaves(shardings)):
            assert v.sharding.is_equivalent_to(s, v.ndim)
        tokens = jnp.asarray(_batch()[0])
        np.testing.assert_allclose(np.asarray(loaded(tokens)[0]), np.asarray(model(tokens)[0]),
                                   atol=1e-5)


def test_rules_replicate_what_does_not_divide():
    mesh = make_mesh(MeshConfig(data=1, fsdp=4, tp=2))
    assert logical_to_spec(("embed", "mlp"), (6, 10), mesh) == P(None, "tp")
    assert logical_to_spec(("batch", None), (3, 5), mesh) == P(None, None)
    assert logical_to_spec(("batch", None), (8, 5), mesh) == P("fsdp", None)
    with pytest.raises(ValueError, match="no rule"):
        logical_to_spec(("nonsense",), (4,), mesh)
    with pytest.raises(ValueError, match="devices"):
        MeshConfig(data=3, fsdp=-1).sizes(8)
