"""Sokoban: rules, solver optimality, generated levels, text episodes."""
import numpy as np
import pytest

from crl_jax.envs.sokoban import SokobanEnv, SokobanExpert, generate_level
from crl_jax.envs.sokoban_solver import apply_move, solve


def parse(rows):
    walls, targets, boxes, player = set(), set(), [], None
    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            if ch == "#":
                walls.add((r, c))
            if ch in "O√S":
                targets.add((r, c))
            if ch in "X√":
                boxes.append((r, c))
            if ch in "PS":
                player = (r, c)
    return frozenset(walls), frozenset(targets), tuple(sorted(boxes)), player


def test_push_rules():
    walls, _, boxes, player = parse(["######", "#PXX_#", "#_X__#", "######"])
    # two boxes in a row cannot be pushed
    assert apply_move(walls, player, boxes, "right") == (player, boxes, False)
    # a box against the wall cannot be pushed; walking into a wall fails
    p, b, moved = apply_move(walls, (1, 3), ((1, 4),), "right")
    assert not moved
    p, b, moved = apply_move(walls, (2, 1), boxes, "right")
    assert moved and p == (2, 2) and (2, 3) in b


def test_solver_is_optimal_on_hand_levels():
    # corridor: push the box 2 right = 2 moves
    walls, targets, boxes, player = parse(["#######", "#PX_O_#", "#######"])
    assert solve(walls, targets, player, boxes) == ["right", "right"]
    # the player steps under the box, then pushes it up: 2 moves
    walls, targets, boxes, player = parse(
        ["#####", "#_O_#", "#_X_#", "#P__#", "#####"])
    plan = solve(walls, targets, player, boxes)
    assert plan is not None and len(plan) == 2 and plan == ["right", "up"]
    # box in a corner off target: unsolvable
    walls, targets, boxes, player = parse(["#####", "#X__#", "#__O#", "#P__#", "#####"])
    assert solve(walls, targets, player, boxes) is None


def test_generated_levels_are_6x6_two_boxes_solvable_and_deterministic():
    for seed in range(20):
        lvl = generate_level(seed)
        assert lvl == generate_level(seed)
        assert lvl.size == 6 and len(lvl.boxes) == 2 and len(lvl.targets) == 2
        assert not set(lvl.boxes) & set(lvl.targets)
        assert solve(lvl.walls, lvl.targets, lvl.player, lvl.boxes) is not None
    assert generate_level(0) != generate_level(1)


def test_expert_wins_every_level_with_events():
    env, expert = SokobanEnv(), SokobanExpert()
    for seed in range(30):
        text, info = env.reset(seed)
        grid = text.split("Map:\n")[1].split("\nLegend")[0].split("\n")
        assert len(grid) == 6 and all(len(r) == 6 for r in grid)
        assert sum(r.count("X") for r in grid) == 2
        assert sum(r.count("O") + r.count("S") for r in grid) == 2
        expert.reset()
        events, total = [], 0.0
        while True:
            res = env.step(expert.act(env))
            events += res.info.subtask_events
            total += res.reward
            if res.done:
                break
        assert res.info.won and total == 1.0
        assert events == ["one_box_placed", "all_boxes_placed"]
        assert "Boxes on targets: 2/2" in res.observation


def test_random_and_junk_actions_never_crash_and_replay_identically():
    def run(seed):
        env = SokobanEnv(max_steps=60)
        rng = np.random.default_rng(seed)
        vocab = ["up", "down", "left", "right", "North", "", "jump", "x" * 999]
        out = [env.reset(seed)[0]]
        while True:
            action = vocab[rng.integers(len(vocab))]
            res = env.step(action)
            assert res.info.invalid_action == (action in ("", "jump", "x" * 999))
            out.append(res.observation)
            if res.done:
                return out
    assert run(2) == run(2)
    assert run(2) != run(3)
    assert len(run(5)) <= 61


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        generate_level(0, size=3)
    with pytest.raises(ValueError):
        SokobanEnv().reset("level-x")
    env = SokobanEnv(max_steps=1)
    env.reset(0)
    env.step("up")
    with pytest.raises(RuntimeError):
        env.step("up")
