"""Train small lossless tokenizers for the CPU presets.

A tiny model trained from scratch on environment text wants a tiny vocabulary
(1-4k tokens) fitted to that text, so the unembedding does not dominate the
compute. Agent text is full of indentation, repeated spaces, newlines and
tabs, and the actor's actions must come back byte for byte, so the tokenizer
must be lossless: decode(encode(x)) == x.

Both kinds give the same special-token layout:
  0 <pad>, 1 <unk>, 2 <s> (bos), 3 </s> (eos), 4 <|im_start|>, 5 <|im_end|>
and the same ChatML-style chat template (`models.tokenizer.render_chatml`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable

from models.tokenizer import CHATML_JINJA, IM_END, IM_START

SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>", IM_START, IM_END)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
KINDS = ("sentencepiece", "bpe")


def train_lossless_tokenizer(texts: Iterable[str], vocab_size: int, out_path: str | os.PathLike,
                             kind: str = "sentencepiece", split_digits: bool = False) -> str:
    """Train a tokenizer on `texts` and write it to the directory `out_path`.

    kind="sentencepiece" writes `out_path/tokenizer.model`; kind="bpe" writes a
    Hugging Face directory (tokenizer.json, tokenizer_config.json with the chat
    template). Returns `out_path`; open it with `models.tokenizer.load_tokenizer`.
    split_digits=True makes every digit its own token (no merged digit runs),
    so a number copied from the input is the same token sequence wherever it
    appears, one token per character: what an actor copying item ids needs.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    texts = [t for t in texts if t]
    if not texts:
        raise ValueError("texts is empty: need at least one non-empty training text")
    if not isinstance(vocab_size, int) or vocab_size < 256 + len(SPECIAL_TOKENS):
        # Both kinds reserve all 256 bytes so any input can be encoded.
        raise ValueError(f"vocab_size must be an int >= {256 + len(SPECIAL_TOKENS)} "
                         f"(256 bytes + {len(SPECIAL_TOKENS)} special tokens), got {vocab_size!r}")
    out_path = os.fspath(out_path)
    os.makedirs(out_path, exist_ok=True)
    if kind == "sentencepiece":
        _train_sentencepiece(texts, vocab_size, out_path, split_digits)
    else:
        _train_byte_level_bpe(texts, vocab_size, out_path, split_digits)
    return out_path


def _train_sentencepiece(texts: list[str], vocab_size: int, out_dir: str,
                         split_digits: bool = False) -> None:
    import sentencepiece as spm

    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=model,
            model_type="bpe",
            vocab_size=vocab_size,
            # The defaults (nmt_nfkc, whitespace squeezing, a dummy leading
            # space) rewrite agent text; these keep every character as is.
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            add_dummy_prefix=False,
            allow_whitespace_only_pieces=True,  # indentation runs become tokens
            byte_fallback=True,                 # unseen characters become bytes, never <unk>
            character_coverage=1.0,
            split_digits=split_digits,
            max_sentence_length=1 << 24,        # long observations are not dropped
            hard_vocab_limit=False,             # a small corpus may yield fewer pieces
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            user_defined_symbols=[IM_START, IM_END],
            num_threads=max(1, min(4, os.cpu_count() or 1)),
            minloglevel=2,
        )
    except RuntimeError as err:
        raise ValueError(f"sentencepiece training failed (vocab_size={vocab_size}): {err}") from err
    with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())


def _train_byte_level_bpe(texts: list[str], vocab_size: int, out_dir: str,
                          split_digits: bool = False) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    # Byte-level BPE maps every byte to a visible symbol before merging, so
    # decoding is exact by construction, whatever the whitespace.
    tok = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    # Digits only splits (never drops), so decoding stays exact.
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                  byte_level]) if split_digits else byte_level)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    # add_special_tokens=True prepends <s>, as the sentencepiece kind does.
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", BOS_ID)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        additional_special_tokens=[IM_START, IM_END], clean_up_tokenization_spaces=False)
    wrapped.chat_template = CHATML_JINJA
    wrapped.save_pretrained(out_dir)
