"""One tokenizer interface over Hugging Face directories and sentencepiece models.

The actor, the extractor and the CPU presets all talk to `Tokenizer`; which
library sits underneath is picked once by `load_tokenizer(path)`:

- a directory holding `tokenizer.json` (a Hugging Face checkpoint, or one
  written by `train_lossless_tokenizer(kind="bpe")`) goes through
  `transformers.AutoTokenizer` offline, so special tokens and the chat template
  from `tokenizer_config.json` (rendered by jinja2) behave exactly as in
  transformers;
- a `.model` file, or a directory holding only `tokenizer.model`, goes through
  sentencepiece, with the built-in ChatML-style template `render_chatml`.

Decoding never applies transformers' "clean up tokenization spaces" pass: the
text the rollout engine sees must be exactly what the tokens spell.
"""

from __future__ import annotations

import abc
import json
import os
from collections.abc import Mapping, Sequence

# Role markers of the built-in chat template; `train_lossless_tokenizer` makes
# each of them a single token.
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"

# End-of-turn tokens that, when a checkpoint defines them, also stop
# generation (Qwen: <|im_end|> ends a chat turn, <|endoftext|> ends a
# document; Llama 3: <|eot_id|> and <|end_of_text|>).
_KNOWN_END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>")

# The built-in template as jinja, written into directories made by
# `train_lossless_tokenizer(kind="bpe")` so both kinds render chats alike.
CHATML_JINJA = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _check_messages(messages: Sequence[Mapping[str, str]]) -> None:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValueError(f"messages must be a list of {{'role', 'content'}} dicts, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str) \
                or not isinstance(message.get("content"), str):
            raise ValueError(
                f"messages[{i}] must be a dict with string 'role' and 'content', got {message!r}")


def render_chatml(messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
    """The built-in chat template (ChatML layout, as Qwen uses).

    Each message becomes `<|im_start|>{role}\\n{content}<|im_end|>\\n`; with
    `add_generation_prompt` the text ends with `<|im_start|>assistant\\n` so the
    model continues as the assistant. No system message is inserted.
    """
    _check_messages(messages)
    parts = [f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages]
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


class Tokenizer(abc.ABC):
    """Uniform tokenizer interface; build one with `load_tokenizer(path)`."""

    @abc.abstractmethod
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of `text`; with `add_special_tokens`, the BOS (or whatever
        the checkpoint's post-processor adds) is included."""

    @abc.abstractmethod
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Text spelled by `ids`, without any whitespace clean-up."""

    @abc.abstractmethod
    def apply_chat_template(self, messages: Sequence[Mapping[str, str]],
                            add_generation_prompt: bool = True) -> str:
        """The chat rendered as prompt text (tokenise it with `encode`)."""

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of token ids, including added special tokens."""

    @property
    @abc.abstractmethod
    def bos_id(self) -> int | None:
        """Beginning-of-sequence id, None when the tokenizer has none (Qwen)."""

    @property
    @abc.abstractmethod
    def eos_id(self) -> int:
        """The primary end-of-sequence id."""

    @property
    @abc.abstractmethod
    def _pad_id_or_none(self) -> int | None:
        ...

    @property
    @abc.abstractmethod
    def _extra_end_ids(self) -> set[int]:
        ...

    @property
    def pad_id(self) -> int:
        """Padding id; falls back to `eos_id` when the tokenizer defines none
        (padded positions are masked, so any valid id works)."""
        pad = self._pad_id_or_none
        return self.eos_id if pad is None else pad

    @property
    def eos_ids(self) -> frozenset[int]:
        """Every id that ends a generation: `eos_id` plus end-of-turn tokens."""
        return frozenset({self.eos_id} | self._extra_end_ids)

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = False) -> list[list[int]]:
        return [self.encode(t, add_special_tokens=add_special_tokens) for t in texts]

    def decode_batch(self, batch: Sequence[Sequence[int]], skip_special_tokens: bool = False) -> list[str]:
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in batch]


class HFTokenizer(Tokenizer):
    """A Hugging Face tokenizer directory (tokenizer.json + tokenizer_config.json)."""

    def __init__(self, path: str):
        from transformers import AutoTokenizer  # heavy import: only when used

        try:
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as err:  # transformers raises many kinds; re-raise with the path
            raise ValueError(f"could not load a Hugging Face tokenizer from {path!r}: {err}") from err
        self.path = path
        if self._tok.eos_token_id is None:
            raise ValueError(f"tokenizer at {path!r} defines no eos_token; set it in tokenizer_config.json")
        self._end_ids = self._find_end_ids(path)

    def _find_end_ids(self, path: str) -> set[int]:
        vocab = self._tok.get_vocab()
        ids = {vocab[t] for t in _KNOWN_END_TOKENS if t in vocab}
        # generation_config.json lists every stop id the checkpoint was tuned with.
        gen_path = os.path.join(path, "generation_config.json")
        if os.path.isfile(gen_path):
            with open(gen_path) as f:
                eos = json.load(f).get("eos_token_id")
            ids |= set(eos) if isinstance(eos, list) else ({eos} if isinstance(eos, int) else set())
        return ids

    def encode(self, text, add_special_tokens=False):
        return list(self._tok.encode(text, add_special_tokens=add_special_tokens))

    def encode_batch(self, texts, add_special_tokens=False):
        if not texts:
            return []
        # One call into the Rust tokenizer for the whole batch.
        return [list(ids) for ids in self._tok(list(texts), add_special_tokens=add_special_tokens)["input_ids"]]

    def decode(self, ids, skip_special_tokens=False):
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens,
                                clean_up_tokenization_spaces=False)

    def decode_batch(self, batch, skip_special_tokens=False):
        return self._tok.batch_decode([list(ids) for ids in batch], skip_special_tokens=skip_special_tokens,
                                      clean_up_tokenization_spaces=False)

    def apply_chat_template(self, messages, add_generation_prompt=True):
        _check_messages(messages)
        if not self._tok.chat_template:
            raise ValueError(f"tokenizer at {self.path!r} has no chat_template (tokenizer_config.json "
                             "or chat_template.jinja)")
        return self._tok.apply_chat_template(list(messages), tokenize=False,
                                             add_generation_prompt=add_generation_prompt)

    @property
    def vocab_size(self):
        return len(self._tok)

    @property
    def bos_id(self):
        return self._tok.bos_token_id

    @property
    def eos_id(self):
        return self._tok.eos_token_id

    @property
    def _pad_id_or_none(self):
        return self._tok.pad_token_id

    @property
    def _extra_end_ids(self):
        return self._end_ids


class SentencePieceTokenizer(Tokenizer):
    """A sentencepiece `.model` file; chats use `render_chatml`.

    Sentencepiece escapes spaces as U+2581, so a literal U+2581 in the input
    decodes as a space: the one character that does not round-trip.
    """

    def __init__(self, model_file: str):
        import sentencepiece as spm

        self.path = model_file
        self._sp = spm.SentencePieceProcessor()
        try:
            self._sp.Load(model_file)
        except (OSError, RuntimeError) as err:
            raise ValueError(f"could not load sentencepiece model {model_file!r}: {err}") from err
        if self._sp.eos_id() < 0:
            raise ValueError(f"sentencepiece model {model_file!r} defines no eos id (train it with eos_id >= 0)")
        end = self._sp.piece_to_id(IM_END)
        self._end_ids = {end} if end != self._sp.unk_id() else set()

    def encode(self, text, add_special_tokens=False):
        return self._sp.encode(text, add_bos=add_special_tokens and self._sp.bos_id() >= 0)

    def encode_batch(self, texts, add_special_tokens=False):
        if not texts:
            return []
        return self._sp.encode(list(texts), add_bos=add_special_tokens and self._sp.bos_id() >= 0)

    def decode(self, ids, skip_special_tokens=False):
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            return self._sp.decode([i for i in ids if not self._is_special(i)])
        # sentencepiece decodes control tokens (pad/bos/eos) to "": spell them
        # out, and decode the runs between them whole (byte pieces must join).
        out, run = [], []
        for i in ids:
            if self._sp.is_control(i):
                out += [self._sp.decode(run), self._sp.id_to_piece(i)]
                run = []
            else:
                run.append(i)
        out.append(self._sp.decode(run))
        return "".join(out)

    def _is_special(self, i: int) -> bool:
        return self._sp.is_control(i) or i in self._end_ids or self._sp.id_to_piece(i) == IM_START

    def apply_chat_template(self, messages, add_generation_prompt=True):
        return render_chatml(messages, add_generation_prompt)

    @property
    def vocab_size(self):
        return self._sp.get_piece_size()

    @property
    def bos_id(self):
        return self._sp.bos_id() if self._sp.bos_id() >= 0 else None

    @property
    def eos_id(self):
        return self._sp.eos_id()

    @property
    def _pad_id_or_none(self):
        return self._sp.pad_id() if self._sp.pad_id() >= 0 else None

    @property
    def _extra_end_ids(self):
        return self._end_ids


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """Open a tokenizer, picking the backend from what `path` holds.

    Accepted: a directory with `tokenizer.json` (Hugging Face), a directory
    with only `tokenizer.model` (sentencepiece), or a `.model` file.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            return HFTokenizer(path)
        if os.path.isfile(os.path.join(path, "tokenizer.model")):
            return SentencePieceTokenizer(os.path.join(path, "tokenizer.model"))
        raise ValueError(f"directory {path!r} holds neither tokenizer.json nor tokenizer.model")
    if os.path.isfile(path):
        if path.endswith(".model"):
            return SentencePieceTokenizer(path)
        raise ValueError(f"{path!r} is a file but not a sentencepiece .model; "
                         "pass a Hugging Face directory or a .model file")
    raise ValueError(f"tokenizer path {path!r} does not exist")
