"""The fast ALFWorld engine on a hand-written game, with expected texts
written out by hand from alfworld 0.4.2's grammar (the same script is
replayed on the real engine in test_alfworld_equivalence.py)."""
import pytest

from crl_jax.envs.alfworld_env import FastAlfWorldEnv
from crl_jax.envs.alfworld_fast import FastAlfredEngine
from crl_jax.envs.alfworld_pddl import display_names, parse_problem
from tests.envs.alfworld_minigame import RECORD

INTRO = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
         "around you, you see a countertop 1, a drawer 2, a drawer 1, a fridge 1, and a sinkbasin 1."
         "\n\nYour task is to: put a cool apple in countertop.")

# (command, feedback, won) of a winning episode.
WIN_SCRIPT = [
    ("go to drawer 2", "You arrive at drawer 2. The drawer 2 is closed.", False),
    ("open drawer 2", "You open the drawer 2. The drawer 2 is open. In it, you see a apple 1.", False),
    ("take apple 1 from drawer 2", "You pick up the apple 1 from the drawer 2.", False),
    ("look", "You are facing the drawer 2, and drawer 1. Next to it, you see nothing.", False),
    ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed.", False),
    ("cool apple 1 with fridge 1", "You cool the apple 1 using the fridge 1.", False),
    ("examine apple 1", "This is a cold apple 1.", False),
    ("inventory", "You are carrying: a apple 1.", False),
    ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a mug 1.", False),
    ("move apple 1 to countertop 1", "You move the apple 1 to the countertop 1.", True),
]

# Moving the mug out of drawer 2 into drawer 1 (same spot) leaves TextWorld's
# not_inreceptacle fact behind: `look` then lists it "next to" the drawers.
QUIRK_SCRIPT = [
    ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a mug 1.", False),
    ("take mug 1 from countertop 1", "You pick up the mug 1 from the countertop 1.", False),
    ("examine mug 1", "This is a normal mug 1. In it, you see nothing.", False),
    ("go to drawer 1", "You arrive at drawer 1. On the drawer 1, you see nothing.", False),
    ("open drawer 2", "You open the drawer 2. The drawer 2 is open. In it, you see a apple 1.", False),
    ("move mug 1 to drawer 2", "You move the mug 1 to the drawer 2.", False),
    ("take mug 1 from drawer 2", "You pick up the mug 1 from the drawer 2.", False),
    ("move mug 1 to drawer 1", "You move the mug 1 to the drawer 1.", False),
    ("look", "You are facing the drawer 2, and drawer 1. Next to it, you see a mug 1.", False),
    ("go to sinkbasin 1", "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing.", False),
    ("look", "You are facing the sinkbasin 1. Next to it, you see nothing.", False),
    ("use apple 1", "Nothing happens.", False),
]


def test_display_names_number_in_reverse_sorted_order():
    ids = ["desk_bar__minus_00", "desk_bar__minus_01", "sink_bar__plus_1_bar_sinkbasin",
           "sink_bar__plus_2", "agent1"]
    names = display_names(ids)
    assert names["desk_bar__minus_00"] == "desk 2" and names["desk_bar__minus_01"] == "desk 1"
    assert names["sink_bar__plus_1_bar_sinkbasin"] == "sinkbasin 1"
    assert names["sink_bar__plus_2"] == "sink 1"
    assert names["agent1"] == "agent1 "


def test_intro_and_first_admissible():
    engine = FastAlfredEngine(RECORD)
    obs, admissible, won = engine.reset()
    assert obs == INTRO and not won
    assert admissible == ("go to countertop 1", "go to drawer 1", "go to drawer 2", "go to fridge 1",
                          "go to sinkbasin 1", "help", "inventory", "look")


def test_stacked_drawers_admissible():
    engine = FastAlfredEngine(RECORD)
    engine.reset()
    _, admissible, _, ok = engine.step("go to drawer 2")
    assert ok
    # No go-to for either drawer of the agent's own spot; both can be examined.
    assert admissible == ("examine drawer 1", "examine drawer 2", "go to countertop 1",
                          "go to fridge 1", "go to sinkbasin 1", "help", "inventory", "look",
                          "open drawer 2")


@pytest.mark.parametrize("script", [WIN_SCRIPT, QUIRK_SCRIPT], ids=["win", "not_inreceptacle"])
def test_scripted_feedback(script):
    engine = FastAlfredEngine(RECORD)
    engine.reset()
    for cmd, expected, won in script:
        feedback, _, is_won, _ = engine.step(cmd)
        assert (feedback, is_won) == (expected, won), cmd


@pytest.mark.parametrize("bad", ["", "   ", "GO TO DRAWER 2", "go to  drawer 2", "put apple 1 in drawer 2",
                                 "x" * 500, "go to drawer 9", None, 17])
def test_invalid_commands_change_nothing(bad):
    env = FastAlfWorldEnv([RECORD])
    obs, info = env.reset(0)
    result = env.step(bad)
    assert result.observation == "Nothing happens."
    assert result.info.invalid_action and result.reward == 0.0 and not result.done
    assert result.info.admissible_actions == info.admissible_actions
    assert env.step("go to drawer 2").observation == WIN_SCRIPT[0][1]


def test_whitespace_around_a_valid_command_is_stripped():
    env = FastAlfWorldEnv([RECORD])
    env.reset(0)
    result = env.step("\t go to drawer 2 \n")
    assert result.observation == WIN_SCRIPT[0][1] and not result.info.invalid_action


def test_win_reward_events_and_info():
    env = FastAlfWorldEnv([RECORD])
    obs, info = env.reset(RECORD.id)
    assert obs == INTRO and info.goal == "put a cool apple in countertop"
    assert info.subtasks == ("locate", "take", "cool", "place") and info.subtask_events == ()
    events = {}
    for cmd, _, _ in WIN_SCRIPT:
        result = env.step(cmd)
        events[cmd] = result.info.subtask_events
    assert events["open drawer 2"] == ("locate",)
    assert events["take apple 1 from drawer 2"] == ("take",)
    assert events["cool apple 1 with fridge 1"] == ("cool",)
    assert events["move apple 1 to countertop 1"] == ("place",)
    assert sum(len(e) for e in events.values()) == 4
    assert result.reward == 1.0 and result.done and result.info.won


def test_lenient_option_maps_old_put_syntax():
    strict, lenient = FastAlfWorldEnv([RECORD]), FastAlfWorldEnv([RECORD], lenient_actions=True)
    for env in (strict, lenient):
        env.reset(0)
        for cmd, _, _ in WIN_SCRIPT[:-1]:
            env.step(cmd)
    assert strict.step("put apple 1 on countertop 1").observation == "Nothing happens."
    result = lenient.step("  Put Apple 1 on countertop 1")
    assert result.info.won and result.info.extra["action_sent"] == "move apple 1 to countertop 1"


def test_turn_cap_truncates():
    env = FastAlfWorldEnv([RECORD], max_steps=2)
    env.reset(0)
    assert not env.step("look").done
    result = env.step("look")
    assert result.done and result.info.extra["truncated"] and not result.info.won


def test_reset_selection_and_errors():
    env = FastAlfWorldEnv([RECORD])
    assert env.reset(None)[1].task_id == RECORD.id and env.reset(5)[1].task_id == RECORD.id
    with pytest.raises(ValueError, match="unknown ALFWorld game id"):
        env.reset("nope")
    with pytest.raises(ValueError):
        env.reset(1.5)


def test_goal_formula_on_hand_built_facts():
    spec = parse_problem(RECORD.pddl_problem)
    apple = next(o for o in spec.objects if o.startswith("apple"))
    counter = next(r for r in spec.receptacles if r.startswith("countertop"))
    base = {"coolable": {(apple,)}, "objecttype": set(spec.otype.items()),
            "receptacletype": set(spec.rtype.items())}
    assert not spec.goal.holds({**base, "iscool": set(), "inreceptacle": {(apple, counter)}})
    assert not spec.goal.holds({**base, "iscool": {(apple,)}, "inreceptacle": set()})
    assert spec.goal.holds({**base, "iscool": {(apple,)}, "inreceptacle": {(apple, counter)}})
