"""Last-token pooling on a decoder against transformers' Qwen3Model."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from models.decoder_embedder import DecoderEmbedder  # noqa: E402


class _IdsTokenizer:
    """Text is a space-separated list of ids (keeps the test tokenizer-free)."""

    def encode(self, text):
        return [int(t) for t in text.split()]


def test_last_token_pooling_matches_qwen3_model(tmp_path):
    cfg = transformers.Qwen3Config(vocab_size=90, hidden_size=32, intermediate_size=48,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, head_dim=8, tie_word_embeddings=True)
    torch.manual_seed(0)
    base = transformers.Qwen3Model(cfg).float().eval()  # saved without "model." prefix
    base.save_pretrained(str(tmp_path))
    emb = DecoderEmbedder.from_checkpoint(str(tmp_path), _IdsTokenizer(), append_id=89,
                                          batch_size=3, bucket=8)
    rng = np.random.default_rng(0)
    texts = [" ".join(map(str, rng.integers(1, 89, size=n))) for n in (3, 17, 9, 1, 30)]
    got = emb.embed(texts)
    for text, row in zip(texts, got):
        ids = torch.tensor([[int(t) for t in text.split()] + [89]])
        with torch.no_grad():
            h = base(input_ids=ids).last_hidden_state[0, -1].numpy()
        np.testing.assert_allclose(row, h / np.linalg.norm(h), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
