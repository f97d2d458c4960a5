"""The released prompt style's parsing and wording (crl_jax/rl/released_prompts.py),
against the released code's behaviour written out by hand."""
import pytest

from crl_jax.rl import prompts
from crl_jax.rl import released_prompts as rp
from crl_jax.rl.rollout import RolloutConfig


@pytest.mark.parametrize("text,want", [
    ("<think>a</think>\n<answer>go to cabinet 1</answer>", "go to cabinet 1"),
    ("<think>a</think><answer> take mug 1 from desk 2 </answer>\nmore", "take mug 1 from desk 2"),
    ("<think>a</think>\n<answer>put mug 1 in cabinet 1</answer>", "put mug 1 in/on cabinet 1"),
    ("<think>a</think>\n<answer>put mug 1 on cabinet 1</answer>", "put mug 1 in/on cabinet 1"),
    # the released clean-up would write "in/on/on" here and then reject it
    ("<think>a</think>\n<answer>put mug 1 in/on cabinet 1</answer>", "put mug 1 in/on cabinet 1"),
    ("<think>a</think>\n<answer>Go To Cabinet 1</answer>", "Go To Cabinet 1"),  # case is kept
    ("<think>a</think>\n<answer>use desklamp 1</answer>", "use desklamp 1"),
    ("<think>a</think>\n<answer>inventory</answer>", "inventory"),
    ("<think>a</think>\n<answer>heat egg 1 with microwave 1</answer>", "heat egg 1 with microwave 1"),
    # format failures: not among the nine templates, no think, text after the
    # answer on its line, no answer at all
    ("<think>a</think>\n<answer>examine cabinet 1</answer>", None),
    ("<think>a</think>\n<answer>look</answer>", None),
    ("<think>a</think>\n<answer>close drawer 1</answer>", None),
    ("<answer>go to cabinet 1</answer>", None),
    ("<think>a</think>\n<answer>go to cabinet 1</answer> now", None),
    ("go to cabinet 1", None),
])
def test_alfworld_answers(text, want):
    assert rp.parse_answer(text, "alfworld") == want


def test_other_environments_take_any_answer():
    assert rp.family("webshop") == "other"
    assert rp.parse_answer("<think>a</think><answer>search[red mug]</answer>",
                           "webshop") == "search[red mug]"
    assert rp.parse_answer("<think>a</think><answer> </answer>", "webshop") is None


def test_tool_calls_and_their_replies():
    call = f"<think>stuck</think><{rp.ASK_TAG}> where is the mug? </{rp.ASK_TAG}>"
    assert rp.parse_ask(call) == "where is the mug?"
    assert prompts.parse_turn(call, "chat", "released", "alfworld") == ("where is the mug?", None)
    assert rp.parse_ask("<think>a</think><answer>inventory</answer>") is None
    assert rp.ask_reply("look in drawers", 1) == "Search results: look in drawers"
    assert rp.ask_reply(None, 0).startswith("Search results: nothing relevant")
    assert "do not ask again" in rp.ask_reply("x", 0)


def test_messages():
    first = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. You see a "
             "desk 1.\n\nYour task is to: put a mug in desk.")
    assert rp.first_user_message(first, "put a mug in desk", 0) == (
        "Observation:\nYou are in the middle of a room. You see a desk 1.\n\n"
        "Your task is: put a mug in desk")
    assert rp.observation_message("You arrive at loc 12. On the desk 1, you see a mug 1.") == (
        "Observation:\nOn the desk 1, you see a mug 1.\n")
    assert rp.observation_message("You arrive at desk 1.") == "Observation:\nYou arrive at desk 1.\n"
    assert rp.system_prompt("alfworld", None) == rp.ALFWORLD_SYSTEM
    assert rp.system_prompt("webshop", "buy cheap").endswith("Lessons:\n\n1. buy cheap")
    assert "Valid actions: a, b" in rp.observation_message("o", ("a", "b"))


def test_the_released_style_needs_a_conversation():
    with pytest.raises(ValueError, match="conversation=true"):
        RolloutConfig(format="chat", prompt_style="released")
    with pytest.raises(ValueError, match="prompt_style"):
        RolloutConfig(format="chat", prompt_style="paper", conversation=True)


MINIHACK = "MiniHack-Room-Ultimate-5x5-v0"


@pytest.mark.parametrize("text,want", [
    ("<think>the stairs are up</think><answer>north</answer>", "north"),
    ("<answer>North</answer>", "north"),  # no think needed; case ignored
    ("<answer>se</answer>", "southeast"),
    ("<answer>3</answer>", "west"),  # the index in the game's order
    ("<answer>move 4 please</answer>", "northeast"),  # the first number
    ("<answer>east</answer> then <answer>west</answer>", "west"),  # the last answer
    ("<answer>go north</answer>", None),
    ("<answer>up</answer>", None),
    ("<answer>9</answer>", None),
    ("north", None),
])
def test_minihack_answers(text, want):
    assert rp.parse_answer(text, MINIHACK, rp.COMPASS) == want


def test_minihack_messages_and_failures():
    first = rp.first_user_message("Goal: reach >\nMap:\n.@>", "reach >", 2, rp.COMPASS, MINIHACK)
    assert first.startswith(rp.MINIHACK_INSTRUCTION)
    assert "Your available actions are:\nnorth, east, south, west," in first
    assert "Observation:\nGoal: reach >\nMap:\n.@>" in first and rp.tool_instructions(2) in first
    assert rp.system_prompt(MINIHACK, None) == rp.MINIHACK_SYSTEM
    # a format failure ends an ALFWorld episode, not a MiniHack one
    assert prompts.format_failure_ends("released", "alfworld")
    assert not prompts.format_failure_ends("released", MINIHACK)
    assert prompts.format_failure_ends("generic", MINIHACK)
