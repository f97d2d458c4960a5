"""Parsing the extractor's operations: valid forms, and malformed text that must be rejected, never raised."""
import json

import pytest

from crl_jax.experience import AddOperation, ReturnOperation, UpdateOperation, parse_operations
from crl_jax.experience.operations import parse_rewrite


def test_valid_operations_in_a_fence_after_reasoning():
    text = ("Let me think... the key was found.\n```json\n"
            + json.dumps([{"operation": "ADD", "entry": {"title": "Keys", "content": {"situation": "dark room",
                                                                                    "action": "search"}}},
                          {"op": "update", "indices": [1, 0, 1], "entry": "Door\nopen it"},
                          {"operation": "return"}]) + "\n```")
    result = parse_operations(text, n_shown=2)
    assert result.rejected == ()
    assert result.operations == (AddOperation("Keys\nsituation: dark room\naction: search"),
                                 UpdateOperation((1, 0), "Door\nopen it"), ReturnOperation())


def test_a_thinking_extractor_s_reasoning_is_not_read_as_operations():
    ops = json.dumps([{"op": "add", "entry": "go to the desk first"}])
    thought = "<think>Entries [0] and [1] overlap; {maybe} merge them.</think>\n"
    want = (AddOperation("go to the desk first"),)
    assert parse_operations(thought + ops, n_shown=2).operations == want
    # the last <answer> wins, as in the released code
    text = f"<think>[1]</think><answer>[]</answer> then <answer>{ops}</answer>"
    assert parse_operations(text, n_shown=2).operations == want
    # without the think block, the first JSON that parses is taken ([0])
    assert parse_operations("Entries [0] overlap. " + ops, n_shown=2).operations == ()


def test_operations_object_and_top_level_title_content():
    text = 'noise {"operations": [{"type": "add", "title": "T", "content": "C"}]} trailing'
    assert parse_operations(text, n_shown=0).operations == (AddOperation("T\nC"),)


@pytest.mark.parametrize("text, reason", [
    ("no json here", "no JSON"),
    ('[{"operation": "delete", "indices": [0]}]', "unknown operation 'delete'"),
    ('[{"operation": "update", "indices": [5], "entry": "x"}]', "out of range"),
    ('[{"operation": "update", "indices": [true], "entry": "x"}]', "list of ints"),
    ('[{"operation": "update", "entry": "x"}]', "list of ints"),
    ('[{"operation": "add", "entry": "   "}]', "empty"),
    ('[{"operation": "add"}]', "empty"),
    ('[{"operation": "add", "entry": "' + "x" * 50 + '"}]', "more than the limit"),
    ('[42]', "must be an object"),
    ('[{"entry": "x"}]', "no name"),
    ('[{"operation": "add", "entry": {"title": 3, "content": []}}]', "empty"),
    ('[{"operation": "add", "entry": "unterminated', "no JSON"),
])
def test_malformed_operations_are_rejected_with_a_reason(text, reason):
    result = parse_operations(text, n_shown=2, max_chars=40)
    assert result.operations == () and result.malformed
    assert len(result.rejected) == 1 and reason in result.rejected[0], result.rejected


def test_more_than_max_ops_keeps_the_first_ones():
    ops = [{"operation": "add", "entry": f"e{i}"} for i in range(5)]
    result = parse_operations(json.dumps(ops), n_shown=0, max_ops=3)
    assert result.operations == tuple(AddOperation(f"e{i}") for i in range(3))
    assert len(result.rejected) == 2 and all("more than 3" in r for r in result.rejected)


def test_mixed_good_and_bad_and_non_text_input():
    result = parse_operations('[{"operation": "add", "entry": "ok"}, {"operation": "zap"}]', n_shown=0)
    assert result.operations == (AddOperation("ok"),) and len(result.rejected) == 1
    assert parse_operations(None, n_shown=0).rejected == ("extractor output is NoneType, not text",)
    assert parse_operations("[]", n_shown=0) == parse_operations("[]", n_shown=0)
    assert parse_operations("[]", n_shown=0).operations == () and not parse_operations("[]", n_shown=0).malformed


def test_parse_rewrite():
    assert parse_rewrite('{"entry": {"title": "A", "content": "B"}}') == "A\nB"
    assert parse_rewrite("  plain text  ") == "plain text"
    assert parse_rewrite("") is None and parse_rewrite(None) is None
    assert parse_rewrite("x" * 10, max_chars=5) is None


def test_every_rejection_reason_has_its_kind():
    """Each way an answer can be malformed, through parse_operations (and the
    consolidation's own reasons), maps to the kind the manager counts."""
    import json as _json
    from crl_jax.experience.operations import parse_operations, rejection_kind

    def kinds(answer, n_shown=1, **kw):
        return [rejection_kind(r) for r in parse_operations(answer, n_shown, **kw).rejected]

    assert kinds("no brackets at all") == ["no_json"]
    assert kinds(None) == ["no_json"]
    assert kinds(_json.dumps([{"op": "add", "entry": "a"}] * 3), max_ops=2) == ["too_many_ops"]
    assert kinds(_json.dumps([{"op": "update", "indices": [4], "entry": "a"}])) == ["bad_indices"]
    assert kinds(_json.dumps([{"op": "update", "indices": "x", "entry": "a"}])) == ["bad_indices"]
    assert kinds(_json.dumps([{"op": "add", "entry": ""}])) == ["bad_entry"]
    assert kinds(_json.dumps([{"op": "add", "entry": "x" * 50}]), max_chars=10) == ["bad_entry"]
    assert kinds(_json.dumps([{"op": "add", "entry": "plain"}]), structured=True) == ["bad_entry"]
    assert kinds(_json.dumps([{"op": "delete"}])) == ["bad_operation"]
    assert kinds(_json.dumps([{"entry": "no name"}])) == ["bad_operation"]
    assert kinds(_json.dumps(["just a string"])) == ["bad_operation"]
    assert rejection_kind("update [0]: entries already changed by this call") == "conflict"
    assert rejection_kind("bank rejected the operations: entry 3 was evicted") == "bank"
    assert rejection_kind("something new") == "other"
