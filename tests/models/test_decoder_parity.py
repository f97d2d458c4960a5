"""Our decoder against the real reference: transformers' PyTorch models.

Tiny random models of each family are built and saved by transformers, loaded
by our loader, and must give the same logits (fp32, max abs diff < 1e-4) on
unpadded and left-padded batches; saving ours must load back in transformers.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jax.numpy as jnp  # noqa: E402

from models.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402

COMMON = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


def _hf_config(kind):
    if kind == "llama3":
        return transformers.LlamaConfig(
            **COMMON, head_dim=8, tie_word_embeddings=False,
            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 32})
    if kind == "llama_bias":  # attention_bias/mlp_bias paths, tied embeddings
        return transformers.LlamaConfig(**COMMON, attention_bias=True, mlp_bias=True,
                                        tie_word_embeddings=True)
    if kind == "qwen2":
        return transformers.Qwen2Config(**COMMON, tie_word_embeddings=True)
    if kind == "qwen3":
        return transformers.Qwen3Config(**COMMON, head_dim=16, tie_word_embeddings=False)
    raise ValueError(kind)


def _hf_model(kind, seed=0):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(_hf_config(kind)).float().eval()
    with torch.no_grad():  # randomise norms and biases too, so every tensor matters
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model


def _hf_logits(model, ids, mask=None):
    with torch.no_grad():
        t = torch.tensor(np.asarray(ids))
        if mask is None:
            return model(input_ids=t).logits.numpy()
        m = torch.tensor(np.asarray(mask))
        pos = torch.clamp(m.long().cumsum(-1) - 1, min=0)
        return model(input_ids=t, attention_mask=m, position_ids=pos).logits.numpy()


@pytest.fixture(scope="module", params=["llama3", "llama_bias", "qwen2", "qwen3"])
def pair(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(request.param))
    hf = _hf_model(request.param)
    hf.save_pretrained(path)
    return request.param, hf, path


@pytest.mark.parametrize("scan", [False, True])
def test_logits_match_transformers_unpadded(pair, scan):
    kind, hf, path = pair
    ours = load_checkpoint(path, scan_layers=scan)
    ids = np.random.default_rng(1).integers(0, 97, size=(3, 40))
    got, _ = ours(jnp.asarray(ids))
    want = _hf_logits(hf, ids)
    assert np.max(np.abs(np.asarray(got) - want)) < 1e-4, kind


def test_left_padded_rows_equal_unpadded_rows(pair):
    kind, hf, path = pair
    ours = load_checkpoint(path)
    rng = np.random.default_rng(2)
    lengths = [37, 12, 25]
    t = max(lengths)
    ids = np.zeros((3, t), np.int64)
    mask = np.zeros((3, t), bool)
    rows = [rng.integers(2, 97, size=n) for n in lengths]
    for i, row in enumerate(rows):
        ids[i, t - len(row):] = row
        mask[i, t - len(row):] = True
    got, _ = ours(jnp.asarray(ids), input_mask=jnp.asarray(mask))
    got = np.asarray(got)
    for i, row in enumerate(rows):
        alone = _hf_logits(hf, row[None])[0]
        assert np.max(np.abs(got[i, t - len(row):] - alone)) < 1e-4, (kind, i)
    # And transformers' own padded forward agrees on the valid positions.
    hf_padded = _hf_logits(hf, ids, mask)
    assert np.max(np.abs(got[mask] - hf_padded[mask])) < 1e-4


def test_save_round_trip_loads_in_transformers(pair, tmp_path):
    kind, hf, path = pair
    ours = load_checkpoint(path, scan_layers=True)
    save_checkpoint(ours, str(tmp_path), max_shard_bytes=20_000)  # force several shards
    assert (tmp_path / "model.safetensors.index.json").exists()
    back = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path)).float().eval()
    ids = np.random.default_rng(3).integers(0, 97, size=(2, 16))
    np.testing.assert_allclose(_hf_logits(back, ids), _hf_logits(hf, ids), atol=1e-5)
    again = load_checkpoint(str(tmp_path))
    a, _ = again(jnp.asarray(ids))
    b, _ = ours(jnp.asarray(ids))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)
