"""Sentence embeddings from a decoder LM by last-token pooling (the
Qwen3-Embedding layout): the final-norm hidden state of each text's last
token, L2-normalised. Used as f_psi at paper scale; the MiniLM encoder in
models/bert_encoder.py is the CPU default.
"""
from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from models.checkpoint import load_checkpoint
from models.decoder import Decoder


def last_token_embeddings(graphdef, state, tokens, input_mask):
    """[B, T] left-padded ids -> [B, d] unit vectors of the last token's state."""
    model: Decoder = nnx.merge(graphdef, state)
    hidden, _ = model.hidden_states(tokens, input_mask=input_mask)
    last = hidden[:, -1].astype(jnp.float32)  # left padding: the last slot is real
    return last / jnp.maximum(jnp.linalg.norm(last, axis=-1, keepdims=True), 1e-12)


class DecoderEmbedder:
    """``embed(texts) -> np.ndarray [n, d]`` over a decoder checkpoint.

    ``tokenizer`` is any object with ``encode(text) -> list[int]`` (see
    models/tokenizer.py). Qwen3-Embedding appends an end-of-text token to
    every input; pass it as ``append_id``. Queries may carry an instruction
    prefix (``query_prefix``) as that model's card recommends.
    """

    def __init__(self, model: Decoder, tokenizer, *, append_id: int | None = None,
                 pad_id: int = 0, max_length: int = 512, batch_size: int = 16,
                 bucket: int = 32, query_prefix: str = ""):
        self.graphdef, self.state = nnx.split(model)
        self.tokenizer = tokenizer
        self.append_id, self.pad_id = append_id, pad_id
        self.max_length, self.batch_size, self.bucket = max_length, batch_size, bucket
        self.query_prefix = query_prefix
        self.dim = model.cfg.hidden_size
        self._fn = jax.jit(functools.partial(last_token_embeddings, self.graphdef))

    @classmethod
    def from_checkpoint(cls, path: str, tokenizer, mesh=None, **kw) -> "DecoderEmbedder":
        # Embedding checkpoints carry no LM head: load tied so none is needed.
        return cls(load_checkpoint(path, mesh=mesh, tie_embeddings=True), tokenizer, **kw)

    def _ids(self, text: str) -> list[int]:
        ids = list(self.tokenizer.encode(text))
        if self.append_id is not None:
            ids = ids[: self.max_length - 1] + [self.append_id]
        return ids[-self.max_length:] if self.append_id is None else ids

    def embed(self, texts: Sequence[str], as_query: bool = False) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed takes a list of strings, got one string")
        out = np.zeros((len(texts), self.dim), np.float32)
        prefix = self.query_prefix if as_query else ""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), self.batch_size):
            idx = order[start:start + self.batch_size]
            rows = [self._ids(prefix + texts[i]) or [self.pad_id] for i in idx]
            t = -(-max(len(r) for r in rows) // self.bucket) * self.bucket
            b = -(-len(rows) // 4) * 4  # few batch shapes -> few compilations
            tokens = np.full((b, t), self.pad_id, np.int32)
            mask = np.zeros((b, t), bool)
            for j, r in enumerate(rows):
                tokens[j, t - len(r):] = r
                mask[j, t - len(r):] = True
            mask[len(rows):, -1] = True  # filler rows: one dummy token, discarded
            emb = np.asarray(self._fn(self.state, jnp.asarray(tokens), jnp.asarray(mask)))
            out[idx] = emb[:len(rows)]
        return out
