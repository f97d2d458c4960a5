"""MiniHack text environment on the real nle/minihack engine."""
import numpy as np
import pytest

pytest.importorskip("nle")
pytest.importorskip("minihack")

from nle import nethack

from crl_jax.envs import minihack_text as mt
from crl_jax.envs.minihack_env import MiniHackEnv
from crl_jax.envs.minihack_expert import MiniHackExpert

ROOM = "MiniHack-Room-Ultimate-5x5-v0"


def play_expert(env, seed, max_steps=400):
    expert = MiniHackExpert()
    env.reset(seed)
    events, rewards = [], []
    for _ in range(max_steps):
        res = env.step(expert.act(env))
        events += res.info.subtask_events
        rewards.append(res.reward)
        if res.done:
            return res, events, rewards
    raise AssertionError("episode did not end")


@pytest.fixture(scope="module")
def room():
    env = MiniHackEnv(ROOM)
    yield env
    env.close()


def test_action_table_matches_nle_enums():
    d, c = nethack.CompassDirection, nethack.Command
    expected = {d.N: "north", d.E: "east", d.S: "south", d.W: "west",
                d.NE: "northeast", d.SE: "southeast", d.SW: "southwest",
                d.NW: "northwest", c.PICKUP: "pick up", c.APPLY: "apply"}
    assert {int(k): v for k, v in expected.items()} == mt.ACTION_NAMES


def test_parse_action_by_name_and_rejects_junk():
    names = ("north", "east", "south", "west", "northeast", "southeast",
             "southwest", "northwest", "pick up", "apply")
    assert mt.parse_action("north", names) == 0
    assert mt.parse_action("  Go North. ", names) == 0
    assert mt.parse_action("move to the south-west", names) == 6
    assert mt.parse_action("pickup", names) == 8
    assert mt.parse_action("apply key", names) == 9
    for junk in ("", "   ", "dance", "north north", "x" * 5000, None, 3):
        assert mt.parse_action(junk, names) is None
    assert mt.parse_action("apply", names[:8]) is None  # not in this task


def test_text_observation_matches_raw_arrays(room):
    text, info = room.reset(11)
    obs = room.obs
    x, y = room.agent_xy
    assert chr(obs["chars"][y, x]) == "@"
    lines = text.split("\n")
    grid = lines[lines.index("Map:") + 1:lines.index("Legend:")]
    y0, y1, x0, x1 = mt.crop_box(obs["chars"], x, y, None)
    expect = [bytes(r).decode().rstrip() for r in obs["chars"][y0:y1, x0:x1]]
    assert grid == expect
    # every symbol on the grid is explained in the legend, and only those
    legend = lines[lines.index("Legend:") + 1:lines.index("Inventory:")]
    assert sorted(l.split(":")[0] for l in legend) == sorted(set("".join(grid)) - {" "})
    assert f"HP: {obs['blstats'][10]}/{obs['blstats'][11]}" in text
    assert grid[y - y0][x - x0] == "@" and f"x={x - x0}, y={y - y0}" in text
    assert lines[-1] == "Valid actions: " + ", ".join(info.admissible_actions)
    # NetHack's first message depends on the date (a new or full moon
    # replaces the greeting): read it from the raw array
    message = bytes(obs["message"]).split(b"\0")[0].decode().strip()
    assert message and f"Message: {message}" in text


def test_bad_actions_do_not_advance_the_game(room):
    room.reset(5)
    before = {k: v.copy() for k, v in room.obs.items()}
    for junk in ("", "fly away", "x" * 10_000, "pick up"):  # pick up: not in Room
        res = room.step(junk)
        assert res.info.invalid_action and not res.done and res.reward == 0.0
        assert "Unknown command" in res.observation
    assert all(np.array_equal(before[k], room.obs[k]) for k in before)
    assert room.step("north").info.invalid_action is False


def test_random_actions_never_crash_and_same_seed_same_episode():
    def run(seed):
        env = MiniHackEnv("MiniHack-KeyRoom-Dark-S5-v0")
        rng = np.random.default_rng(seed)
        vocab = list(env.action_names) + ["", "jump", "NORTH"]
        texts = [env.reset(seed)[0]]
        for _ in range(120):
            res = env.step(vocab[rng.integers(len(vocab))])
            texts.append(res.observation)
            if res.done:
                break
        env.close()
        return texts
    a, b, c = run(3), run(3), run(4)
    assert a == b
    assert a != c


@pytest.mark.parametrize("env_id,seeds,min_wins", [
    (ROOM, range(8), 7),
    ("MiniHack-Room-15x15-v0", range(2), 2),
    ("MiniHack-MazeWalk-9x9-v0", range(4), 4),
    ("MiniHack-KeyRoom-Dark-S5-v0", range(4), 4),
    ("MiniHack-River-Narrow-v0", range(2), 2),
])
def test_expert_wins_with_subtask_events(env_id, seeds, min_wins):
    env = MiniHackEnv(env_id)
    wins = 0
    for seed in seeds:
        res, events, rewards = play_expert(env, seed)
        if res.info.won:
            wins += 1
            assert rewards[-1] == 1.0 and sum(rewards) == 1.0
            assert res.info.extra["raw_reward"] > 0
            # events come in the task's own subgoal order, each once
            assert events == list(env.spec.subtasks)
        else:
            assert sum(rewards) == 0.0
    env.close()
    assert wins >= min_wins


def test_unknown_task_and_bad_seed_raise():
    with pytest.raises(ValueError, match="unknown MiniHack task"):
        MiniHackEnv("MiniHack-Nope-v0")
    env = MiniHackEnv(ROOM)
    with pytest.raises(ValueError, match="int seed"):
        env.reset("not-a-seed")
    env.close()


def test_extractor_trajectory_keeps_the_message_not_the_repeated_goal(room):
    """The extractor reads each step clipped to 40 characters; every MiniHack
    observation opens with the goal line, which alone would fill the clip."""
    from crl_jax.rl import prompts
    obs, info = room.reset(0)
    steps = [room.step(a) for a in ("north", "east")]
    text = prompts.trajectory_text(["north", "east"], [s.observation for s in steps])
    assert "Goal:" not in text
    for part, action, step in zip(text.split(" | "), ["north", "east"], steps):
        message = step.observation.splitlines()[1]
        assert message.startswith("Message: ")
        assert part.startswith(f"{action} -> {message[:20]}"), part


def test_direct_moves_by_hand():
    from crl_jax.envs.minihack_expert import direct_moves
    assert direct_moves((3, 3), (5, 4)) == ["southeast", "east"]
    assert direct_moves((5, 5), (5, 2)) == ["north"] * 3
    assert direct_moves((4, 4), (2, 2)) == ["northwest"] * 2
    assert direct_moves((1, 1), (1, 1)) == []


def test_the_informed_expert_walks_the_plan_and_beats_the_search():
    """Given the straight way to the stairs the search found, it wins the
    rooms the searcher won, in fewer actions; given a wrong plan (moves into
    the wall) it gives it up and still wins by searching."""
    from crl_jax.envs.minihack_expert import MiniHackPlanExpert, direct_moves, goal_of
    from crl_jax.training.warmstart import play_expert as play
    env = MiniHackEnv(ROOM, seeded_clock=True)
    searched, informed, wrong = [], [], []
    for seed in range(20):
        search = play(env, seed, MiniHackExpert(), 60, ROOM)
        if not search.won:
            continue
        start, stairs = goal_of(env, seed, search.actions)
        plan = direct_moves(start, stairs)
        walk = play(env, seed, MiniHackPlanExpert(plan), 60, ROOM)
        searched.append(len(search.actions))
        informed.append(len(walk.actions) if walk.won else None)
        if walk.won and len(plan) == len(walk.actions):  # nothing in the way: the plan, exactly
            assert walk.actions == plan
        lost = play(env, seed, MiniHackPlanExpert(["west"] * 8 + ["north"] * 8), 60, ROOM)
        wrong.append(lost.won)
    env.close()
    wins = [n for n in informed if n is not None]
    assert len(searched) >= 18 and len(wins) >= 0.9 * len(searched)
    assert np.mean(wins) * 1.5 < np.mean(searched)  # measured: 2.8 against 6.6 actions
    assert np.mean(wrong) >= 0.9
