"""The periodic-merge deciders: the extractor's answer format and dedup."""
from crl_jax import prompts
from crl_jax.setup import dedup_merger


def test_parse_merge_accepts_only_a_list_of_texts():
    assert prompts.parse_merge('keep these: ["take mug", "heat it"] thanks') == ["take mug", "heat it"]
    for bad in ("no list here", "[1, 2]", '["ok", ""]', "[unclosed", '{"a": 1}'):
        assert prompts.parse_merge(bad) is None, bad


def test_render_merge_numbers_the_window():
    text = prompts.render_merge(["a b", "c"], "compact")
    assert text == "merge:\n[0] a b\n[1] c\nkeep: "
    chat = prompts.render_merge(["a b"], "chat")
    assert chat[0]["role"] == "system" and "[0] a b" in chat[1]["content"]


def test_dedup_merger_keeps_first_of_equal_texts():
    texts = ["Take the mug", "take  the MUG", "open fridge", "Take the mug"]
    assert dedup_merger(texts) == ["Take the mug", "open fridge"]
