"""Tokenizer adapter: lossless round trips, HF parity, chat templates, errors."""

import json

import pytest
from tokenizers import Tokenizer as RawTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

from models.tokenizer import HFTokenizer, SentencePieceTokenizer, load_tokenizer, render_chatml
from models.tokenizer_training import train_lossless_tokenizer

# Agent-like text: observations, actions, code with indentation, tabs,
# repeated and trailing spaces, blank lines, CRLF, non-ASCII.
AGENT_TEXTS = [
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 4, "
    "a countertop 1, a drawer 2, and a sinkbasin 1.\nYour task is to: put a clean mug in coffeemachine.",
    "> go to countertop 1\nOn the countertop 1, you see a mug 2, and a spatula 1.\n> take mug 2 from countertop 1",
    "<think>The mug is dirty.  I should   clean it first.</think>\n<action>clean mug 2 with sinkbasin 1</action>",
    "def step(state, action):\n    if action == 'go':\n        return state  +  1\n\treturn   state\n\n\n",
    "Traceback (most recent call last):\n  File \"run.py\", line 3\n    x =  [1,\t2]\r\n",
    "   leading spaces, trailing spaces   \n \n\t\t\n",
    "Experience: when the target is in a closed receptacle, open it first. Ünïcödé → 日本語 😀 ±½",
]
HELD_OUT = [
    "    indented action   with  gaps\n\t\ttabbed\n\n",
    "New words never seen: xylophone Ωmega ✓ 🤖 naïve façade\r\n  end",
    "",
    " ",
    "\n",
    "<|im_start|>user\nhello<|im_end|>\n",
]


@pytest.fixture(scope="module", params=["sentencepiece", "bpe"])
def trained(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    corpus = AGENT_TEXTS * 20
    return train_lossless_tokenizer(corpus, 600, out, kind=request.param), request.param


def test_trained_tokenizer_round_trips_agent_text(trained):
    path, kind = trained
    tok = load_tokenizer(path)
    assert isinstance(tok, SentencePieceTokenizer if kind == "sentencepiece" else HFTokenizer)
    for text in AGENT_TEXTS + HELD_OUT:
        ids = tok.encode(text)
        assert all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)
        assert tok.decode(ids) == text, (kind, text)
    assert tok.decode_batch(tok.encode_batch(AGENT_TEXTS + HELD_OUT)) == AGENT_TEXTS + HELD_OUT
    assert tok.encode_batch(HELD_OUT) == [tok.encode(t) for t in HELD_OUT]
    assert tok.encode_batch([]) == [] and tok.decode_batch([]) == []


def test_trained_tokenizer_compresses_and_has_fixed_special_ids(trained):
    path, _ = trained
    tok = load_tokenizer(path)
    # Merges were learned: far fewer tokens than UTF-8 bytes on training text.
    text = AGENT_TEXTS[0]
    assert len(tok.encode(text)) < len(text.encode()) / 2
    assert (tok.pad_id, tok.bos_id, tok.eos_id) == (0, 2, 3)
    assert tok.encode("<|im_start|>") == [4] and tok.encode("<|im_end|>") == [5]
    assert tok.eos_ids == {3, 5}
    # add_special_tokens prepends bos; skip_special_tokens drops the markers.
    ids = tok.encode("take mug 2", add_special_tokens=True)
    assert ids[0] == 2 and ids[1:] == tok.encode("take mug 2")
    assert tok.decode(ids + [3], skip_special_tokens=True) == "take mug 2"
    assert tok.decode(ids + [3]) == "<s>take mug 2</s>"


def test_trained_tokenizer_chat_template_is_chatml(trained):
    path, _ = trained
    tok = load_tokenizer(path)
    messages = [{"role": "system", "content": "Act."}, {"role": "user", "content": "  look\n"}]
    expected = "<|im_start|>system\nAct.<|im_end|>\n<|im_start|>user\n  look\n<|im_end|>\n"
    assert tok.apply_chat_template(messages, add_generation_prompt=False) == expected
    assert tok.apply_chat_template(messages) == expected + "<|im_start|>assistant\n"
    assert render_chatml(messages) == expected + "<|im_start|>assistant\n"
    rendered = tok.apply_chat_template(messages)
    assert tok.decode(tok.encode(rendered)) == rendered


# A Qwen-style (ChatML) template written for this test: a default system
# message when none is given, then <|im_start|>role ... <|im_end|> turns.
QWEN_STYLE_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@pytest.fixture(scope="module")
def qwen_style_dir(tmp_path_factory):
    """A real HF tokenizer directory built with the tokenizers library."""
    out = tmp_path_factory.mktemp("qwen_style")
    raw = RawTokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    raw.train_from_iterator(AGENT_TEXTS * 10, trainers.BpeTrainer(
        vocab_size=500, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    raw.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "clean_up_tokenization_spaces": False,
        "chat_template": QWEN_STYLE_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    return out


def test_hf_directory_matches_transformers(qwen_style_dir):
    tok = load_tokenizer(qwen_style_dir)
    ref = AutoTokenizer.from_pretrained(str(qwen_style_dir), local_files_only=True)
    assert isinstance(tok, HFTokenizer)
    for text in AGENT_TEXTS + HELD_OUT:
        assert tok.encode(text) == ref.encode(text, add_special_tokens=False)
        assert tok.decode(tok.encode(text)) == text
    messages = [{"role": "user", "content": "go to desk 1"}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "  now?"}]
    for gen in (True, False):
        assert tok.apply_chat_template(messages, add_generation_prompt=gen) == ref.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=gen)
    assert tok.apply_chat_template(messages).startswith("<|im_start|>system\nYou are a helpful assistant.")
    vocab = ref.get_vocab()
    assert tok.vocab_size == len(ref)
    assert tok.bos_id is None
    assert tok.eos_id == vocab["<|im_end|>"]
    assert tok.pad_id == vocab["<|endoftext|>"]
    assert tok.eos_ids == {vocab["<|im_end|>"], vocab["<|endoftext|>"]}


def test_hf_eos_ids_include_generation_config(qwen_style_dir, tmp_path):
    import shutil

    local = tmp_path / "with_gen"
    shutil.copytree(qwen_style_dir, local)
    (local / "generation_config.json").write_text(json.dumps({"eos_token_id": [7, 8]}))
    tok = load_tokenizer(local)
    assert tok.eos_ids == {7, 8, tok.eos_id, tok.encode("<|endoftext|>")[0]}


def test_pad_falls_back_to_eos(qwen_style_dir, tmp_path):
    import shutil

    local = tmp_path / "no_pad"
    shutil.copytree(qwen_style_dir, local)
    config = json.loads((local / "tokenizer_config.json").read_text())
    config["pad_token"] = None
    (local / "tokenizer_config.json").write_text(json.dumps(config))
    tok = load_tokenizer(local)
    assert tok.pad_id == tok.eos_id == tok.encode("<|im_end|>")[0]


def test_bad_paths_and_inputs_raise(tmp_path, trained):
    with pytest.raises(ValueError, match="does not exist"):
        load_tokenizer(tmp_path / "missing")
    with pytest.raises(ValueError, match="neither tokenizer.json nor tokenizer.model"):
        load_tokenizer(tmp_path)
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="not a sentencepiece"):
        load_tokenizer(tmp_path / "notes.txt")
    (tmp_path / "broken.model").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="could not load sentencepiece"):
        load_tokenizer(tmp_path / "broken.model")
    bad_hf = tmp_path / "bad_hf"
    bad_hf.mkdir()
    (bad_hf / "tokenizer.json").write_text("{ this is not json")
    with pytest.raises(ValueError, match="could not load a Hugging Face tokenizer"):
        load_tokenizer(bad_hf)
    tok = load_tokenizer(trained[0])
    with pytest.raises(ValueError, match="messages"):
        tok.apply_chat_template("hello")
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        tok.apply_chat_template([{"role": "user"}])


def test_training_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        train_lossless_tokenizer(AGENT_TEXTS, 600, tmp_path, kind="wordpiece")
    with pytest.raises(ValueError, match="vocab_size must be"):
        train_lossless_tokenizer(AGENT_TEXTS, 100, tmp_path)
    with pytest.raises(ValueError, match="texts is empty"):
        train_lossless_tokenizer(["", ""], 600, tmp_path)


@pytest.mark.parametrize("kind", ["sentencepiece", "bpe"])
def test_split_digits_gives_one_token_per_digit(kind, tmp_path):
    # A shop page and the click that copies an id off it: the id must read
    # as the same tokens in both places.
    page = ["[b064787394] vegan snacks $12.99\n[b015802094] kosher soup $3.50\n"] * 40
    action = "click[b064787394]"
    merged = load_tokenizer(train_lossless_tokenizer(page + AGENT_TEXTS, 600, tmp_path / "m", kind=kind))
    split = load_tokenizer(train_lossless_tokenizer(page + AGENT_TEXTS, 600, tmp_path / "s", kind=kind,
                                                    split_digits=True))

    def pieces(tok, text):
        return [tok.decode([i]) for i in tok.encode(text)]

    assert any(sum(c.isdigit() for c in p) > 1 for p in pieces(merged, action))  # runs merged
    got = pieces(split, action)
    assert all(sum(c.isdigit() for c in p) <= 1 for p in got)
    assert [p for p in got if p.isdigit()] == list("064787394")
    for text in [action] + page[:1] + AGENT_TEXTS + HELD_OUT:
        assert split.decode(split.encode(text)) == text  # still lossless
