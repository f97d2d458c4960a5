"""Experience the actor can read: the informed expert, guided demonstrations,
the oracle control and a warm start kept apart from the RL pool."""
from __future__ import annotations

import numpy as np
import pytest

from crl_jax.envs.alfworld_expert import (
    AlfWorldEnvExpert,
    plan_receptacles,
    room_receptacles,
)
from crl_jax.envs.registry import make_env, make_expert
from crl_jax.training import config_io
from experiments import configs as presets
from crl_jax.training.components import collect_demos, task_pool, task_sources
from crl_jax.training.guided_demos import (
    corrupt_plan,
    guided_demos,
    own_plan_demo,
    parse_mix,
    plan_steps,
    plan_units,
)
from crl_jax.training.oracle import oracle_plans, oracle_retriever
from crl_jax.training.warmstart import Demo, plan_entry, play_expert


def _games(n: int, room_size: str):
    from crl_jax.envs.alfworld_generator import generate_games
    return make_env("alfworld", games=generate_games(n, seed=3, room_size=room_size),
                    max_steps=120)


@pytest.mark.parametrize("room_size, n", [("small", 40), ("full", 12)])
def test_the_informed_expert_wins_every_game_with_its_plan_in_no_more_actions(room_size, n):
    env = _games(n, room_size)
    fewer = 0
    for task in range(n):
        searching = play_expert(env, task, make_expert("alfworld"), 120, "alfworld")
        assert searching.won
        plan = plan_steps(plan_entry(searching))
        informed = play_expert(env, task, AlfWorldEnvExpert(plan), 120, "alfworld")
        assert informed.won, (task, plan, informed.actions)
        assert len(informed.actions) <= len(searching.actions), (task, searching.actions,
                                                                 informed.actions)
        fewer += len(informed.actions) < len(searching.actions)
    assert fewer >= n // 4  # knowing the plan shortens many games, not just a few


def _wrong_units(plan: str, bad: str) -> int:
    a, b = plan_steps(plan), plan_steps(bad)
    assert len(a) == len(b)
    return sum(any(a[i] != b[i] for i in unit) for unit in plan_units(a))


def test_a_corrupted_plan_has_exactly_k_wrong_steps():
    env = _games(8, "small")
    rng = np.random.default_rng(0)
    for task in range(8):
        demo = own_plan_demo(env, play_expert(env, task, make_expert("alfworld"), 60, "alfworld"),
                             60)
        rooms = room_receptacles(demo.observations[0])
        plan = plan_entry(demo)
        units = plan_units(plan_steps(plan))
        for k in range(len(units) + 1):
            bad = corrupt_plan(plan, k, rng, rooms)
            assert bad.split(": ")[0] == plan.split(": ")[0]  # the goal stays
            assert _wrong_units(plan, bad) == k
            steps, wrong_steps = plan_steps(plan), plan_steps(bad)
            for unit in units:  # a unit sent elsewhere goes wholly to one other place
                places = {tuple(plan_receptacles([wrong_steps[i]])) for i in unit
                          if wrong_steps[i] != steps[i] and plan_receptacles([steps[i]])}
                assert len(places) <= 1
                for (place,) in places:
                    assert place in rooms and place not in plan_receptacles(
                        [steps[i] for i in unit])


def test_a_plan_keeps_the_walk_to_where_things_were_taken_or_used():
    actions = ["go to drawer 1", "open drawer 1", "go to countertop 1", "take mug 1 from countertop 1",
               "go to fridge 1", "cool mug 1 with fridge 1", "go to shelf 1", "go to desk 1",
               "use desklamp 1"]
    demo = Demo("alfworld", 0, "cool some mug", ["obs"] * 10, actions, True)
    assert plan_entry(demo) == ("cool some mug: open drawer 1 > go to countertop 1 > take mug 1 "
                                "from countertop 1 > cool mug 1 with fridge 1 > go to desk 1 > "
                                "use desklamp 1")
    # the walk and the opening before a take are one unit with it
    steps = plan_steps("g: open drawer 1 > go to cabinet 2 > open cabinet 2 > take x 1 from cabinet 2"
                       " > move x 1 to shelf 1")
    assert plan_units(steps) == [[0], [1, 2, 3], [4]]


def test_guided_demo_sources_follow_or_ignore_their_line():
    env = _games(30, "small")
    demos = [play_expert(env, t, make_expert("alfworld"), 60, "alfworld") for t in range(30)]
    rng = np.random.default_rng(1)
    own = guided_demos(demos, lambda: _games(30, "small"), "own:1", 1.0, 60, rng)
    assert own and all(d.source == "own" and d.experience == plan_entry(d) for d in own)
    peer = guided_demos(demos, lambda: _games(30, "small"), "peer:1", 1.0, 60, rng)
    by_task = {d.task: d for d in demos}
    for d in peer:  # the searching expert's own actions, another game's plan
        assert d.actions == by_task[d.task].actions and d.experience != plan_entry(d)
    free = guided_demos(demos, lambda: _games(30, "small"), "own:1", 0.0, 60, rng)
    assert all(d.experience is None for d in free) and len(free) == sum(d.won for d in demos)


@pytest.mark.parametrize("text, error", [("own:1,bogus:1", "bogus"), ("own:x", "number"),
                                         ("own:0", "positive"), ("noisy0:1", "noisy0")])
def test_a_bad_mix_names_what_is_valid(text, error):
    with pytest.raises(ValueError, match=error):
        parse_mix(text)
    assert parse_mix("own:2,noisy1:1,peer:1") == [("own", 0.5), ("noisy1", 0.25), ("peer", 0.25)]


def test_the_oracle_returns_the_own_games_plan_with_exactly_k_wrong_steps():
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"), [
        "env.num_generated=24", "train.task_pool=4", "experience.mode=oracle"])
    src = task_pool(cfg, task_sources(cfg, "generated", None)[0])
    clean = oracle_plans([src], 0, 10, seed=0)
    noisy = oracle_plans([src], 2, 10, seed=0)
    env = src.make()
    for task in src.tasks:
        demo = play_expert(env, task, make_expert("alfworld"), 30, "alfworld")
        assert clean[("alfworld", task)] == plan_entry(own_plan_demo(env, demo, 30))
        plan = clean[("alfworld", task)]
        assert _wrong_units(plan, noisy[("alfworld", task)]) == min(2, len(plan_units(
            plan_steps(plan))))
    assert oracle_plans([src], 2, 10, seed=0) == noisy  # one fixed entry per game
    peers = oracle_plans([src], 0, 10, seed=0, peer=True)
    assert all(peers[key] != clean[key] and peers[key] in clean.values() for key in clean)
    retrieve = oracle_retriever(noisy, "alfworld", src.tasks, [True, False, True, False])
    assert retrieve(["q", "q"], ["alfworld"] * 2) == [
        (noisy[("alfworld", src.tasks[0])], None), (noisy[("alfworld", src.tasks[2])], None)]


def test_a_disjoint_pool_shares_no_game_with_the_warm_start():
    cfg = config_io.apply_overrides(presets.load_preset("alfworld_cpu"), [
        "env.num_generated=40", "warm_start.demos=36", "train.task_pool=6"])
    assert cfg.train.pool_disjoint  # the CPU presets keep them apart
    src = task_sources(cfg, "generated", None)[0]
    demos = collect_demos(cfg, [src])
    pool = set(task_pool(cfg, src).tasks)
    assert len(pool) == 6 and len(demos) == 34
    assert not pool & {d.task for d in demos}
    together = config_io.apply_overrides(cfg, ["train.pool_disjoint=false"])
    assert pool & {d.task for d in collect_demos(together, [src])}


def test_minihack_room_guided_demos_follow_their_line():
    """A room's own plan is the straight way to its stairs: the guided demo
    walks it (so its actions depend on the line) and is shorter than the
    searching demo; a noisy line differs from the own plan in exactly one
    step; the oracle hands out the same own plans."""
    pytest.importorskip("nle")
    from crl_jax.envs.minihack_env import MiniHackEnv
    room = "MiniHack-Room-Ultimate-5x5-v0"

    def make():
        return MiniHackEnv(room, seeded_clock=True)

    env = make()
    demos = [play_expert(env, seed, make_expert(room), 30, room) for seed in range(12)]
    env.close()
    wins = [d for d in demos if d.won]
    rng = np.random.default_rng(0)
    own = guided_demos(wins, make, "own:1", 1.0, 30, rng)
    assert len(own) >= 0.9 * len(wins)
    followed = [g for g in own if plan_steps(g.experience) == g.actions]
    assert len(followed) >= 0.8 * len(own)  # a monster in the way can cost a retry
    assert np.mean([len(g.actions) for g in own]) < np.mean([len(d.actions) for d in wins])
    noisy = guided_demos(wins, make, "noisy1:1", 1.0, 30, np.random.default_rng(0))
    by_task = {g.task: g.experience for g in own}
    for g in noisy:
        if g.task in by_task and len(plan_steps(by_task[g.task])) == len(plan_steps(g.experience)):
            diff = sum(a != b for a, b in zip(plan_steps(by_task[g.task]),
                                              plan_steps(g.experience)))
            assert diff == 1


def test_the_expert_actions_ratio_counts_only_the_games_won_within_each_cap():
    from experiments.diagnostics.expert_turn_cap import actions_ratio_report
    results = {"searching": [4, 9, 12, None, 6], "own plan": [3, 5, 5, 4, None]}
    rows = actions_ratio_report(results, (8, 10)).splitlines()[2:]
    # within 8: searching won in 4 and 6 actions (5.0), own plan in 3, 5, 5, 4 (4.25)
    assert rows[0] == "| 8 | 5.0 | 4.2 | 1.18x |"
    # within 10 the 9-action search counts too: (4 + 9 + 6) / 3 = 6.33
    assert rows[1] == "| 10 | 6.3 | 4.2 | 1.49x |"


def test_the_expert_tables_add_the_household_lesson_and_split_by_task_type():
    from experiments.diagnostics.expert_turn_cap import actions_ratio_report, by_type_report
    results = {"searching": [9, None, 6, 12], "own plan": [4, 5, 4, 6],
               "household lesson": [6, 8, 4, 7]}
    row = actions_ratio_report(results, (10,)).splitlines()[2]
    # searching won in 9 and 6 (7.5); own plan 4, 5, 4, 6 (4.75); lesson 6, 8, 4, 7 (6.25)
    assert row == "| 10 | 7.5 | 4.8 | 1.58x | 6.2 | 1.20x |"
    lines = by_type_report(results, ["two", "two", "pick", "pick"], 10).splitlines()
    assert lines[0] == "| task type | games | searching | own plan | household lesson |"
    # pick: searching won game 2 only (6 actions); two: game 0 (9), lost game 1
    assert lines[2] == "| pick | 2 | 0.50 (6.0) | 1.00 (5.0) | 1.00 (5.5) |"
    assert lines[3] == "| two | 2 | 0.50 (9.0) | 1.00 (4.5) | 1.00 (7.0) |"


def test_a_seen_peer_names_objects_the_game_shows_of_another_type_than_the_goals():
    from crl_jax.envs.alfworld_expert import parse_seen
    from crl_jax.training.guided_demos import seen_peers, taken_objects
    env = _games(60, "small")
    demos = [play_expert(env, t, make_expert("alfworld"), 60, "alfworld") for t in range(60)]
    found = 0
    for d in demos:
        seen = {x for obs in d.observations for x in parse_seen(obs)}
        kinds = {x.rsplit(" ", 1)[0] for x in taken_objects(d)}
        assert kinds, "every won game takes something"
        chosen = seen_peers(d, [p for p in demos if p is not d])
        found += bool(chosen)
        for p in chosen:  # checked here from the observations' text, not the helper's sets
            for x in taken_objects(p):
                assert x in seen and x.rsplit(" ", 1)[0] not in kinds
                assert any(f" {x}," in f" {o}," or f"a {x}." in o for o in d.observations)
    assert found >= 10  # the selection is not empty in practice
    rng = np.random.default_rng(0)
    lines = guided_demos(demos, lambda: _games(60, "small"), "peerseen:1", 1.0, 60, rng)
    by_task = {d.task: d for d in demos}
    for g in lines:  # the searching expert's actions, with a line from another game
        assert g.source == "peerseen" and g.actions == by_task[g.task].actions
        assert g.experience != plan_entry(by_task[g.task])


def test_a_swapped_plan_is_the_own_plan_naming_an_object_of_another_type_the_game_shows():
    import re

    from crl_jax.envs.alfworld_expert import kind_of, parse_seen
    from crl_jax.training.guided_demos import swapped_plan, taken_objects
    env = _games(40, "small")
    demos = [play_expert(env, t, make_expert("alfworld"), 60, "alfworld") for t in range(40)]
    rng = np.random.default_rng(0)
    made = 0
    for d in demos:
        line = swapped_plan(d, rng)
        if line is None:
            continue
        made += 1
        own = plan_entry(d)
        own_type = kind_of(sorted(taken_objects(d))[0])
        goal, steps = line.split(": ", 1)[0], plan_steps(line)
        took = [m.group(1) for s in steps if (m := re.match(r"take (.+?) from ", s))]
        other = {kind_of(x) for x in took}
        assert len(other) == 1 and own_type not in other
        new_type = other.pop()
        seen = {x for obs in d.observations for x in parse_seen(obs)}
        assert set(took) <= seen  # objects the game shows, under their names
        assert re.search(rf"\b{new_type}", goal) and not re.search(rf"\b{own_type}\b", goal)
        assert not re.search(rf"\b{own_type} \d", line)  # no step names the goal's object
        # the same walk and places, step for step: only the object differs
        assert len(steps) == len(plan_steps(own))
        for a, b in zip(steps, plan_steps(own)):
            assert a.rsplit(" ", 2)[-2:] == b.rsplit(" ", 2)[-2:]
    assert made >= 35  # small rooms nearly always show something else
    assert parse_mix("own:2,swap:2") == [("own", 0.5), ("swap", 0.5)]
    lines = guided_demos(demos[:12], lambda: _games(40, "small"), "swap:1", 1.0, 60,
                         np.random.default_rng(1))
    by_task = {d.task: d for d in demos}
    for g in lines:  # the searching expert's own actions: it ignores the line
        assert g.source == "swap" and g.actions == by_task[g.task].actions
        assert g.experience != plan_entry(by_task[g.task])


def test_contrasting_demos_show_each_guided_game_with_a_line_followed_and_one_ignored():
    env = _games(30, "small")
    demos = [play_expert(env, t, make_expert("alfworld"), 60, "alfworld") for t in range(16)]
    wins = [d for d in demos if d.won]
    out = guided_demos(demos, lambda: _games(30, "small"), "own:1,swap:1,peer:1", 1.0, 60,
                       np.random.default_rng(2), contrast=True)
    by_task = {d.task: d for d in wins}
    pairs: dict = {}
    for g in out:
        pairs.setdefault(g.task, []).append(g)
    assert set(pairs) == set(by_task)  # the informed expert and the copies all win
    for task, (follow, ignore) in pairs.items():
        searching = by_task[task]
        assert follow.source == "own" and follow.experience == plan_entry(follow)
        assert ignore.source in ("swap", "peer") and ignore.actions == searching.actions
        assert ignore.experience != plan_entry(searching)
        assert follow.observations[0] == ignore.observations[0]  # same game, same start
    assert {g.source for g in out} == {"own", "swap", "peer"}
    # a guided share of 0 leaves every game free, as without contrast
    free = guided_demos(demos, lambda: _games(30, "small"), "own:1,peer:1", 0.0, 60,
                        np.random.default_rng(2), contrast=True)
    assert [d.actions for d in free] == [d.actions for d in wins]
    assert all(d.experience is None for d in free)
    with pytest.raises(ValueError, match="only one kind"):
        guided_demos(demos, lambda: _games(30, "small"), "own:2,noisy1:1", 0.5, 60,
                     np.random.default_rng(2), contrast=True)


def test_extractor_fit_report_counts_what_exceeds_each_limit():
    from experiments.diagnostics.extractor_fit import report
    m = {"games": 5, "cap": 10, "clip": 700, "answer_cap": 64,
         "chars": [300, 650, 701, 900], "chars_within_cap": [300, 650],
         "answer_tokens": [40, 64, 65, 71]}
    rows = report(m).splitlines()[4:]
    assert rows[0].startswith("| trajectory chars (clip 700) | 4 | 676 |")
    assert rows[0].endswith("| 900 | 0.500 |")  # 701 and 900 are clipped
    assert rows[1].endswith("| 650 | 0.000 |")
    assert rows[2].endswith("| 71 | 0.500 |")  # 65 and 71 are cut; 64 fits


def test_extractor_fit_measures_the_plans_the_warm_start_teaches():
    """On a few generated games: every won game is measured, and a plan's
    answer is its JSON's tokens and the stop token."""
    from crl_jax.training.config_io import apply_overrides
    from experiments.configs import load_preset
    from experiments.diagnostics.extractor_fit import measure
    cfg = apply_overrides(load_preset("alfworld_cpu"), ["warm_start.vocab_size=400",
                                                        "env.num_generated=40"])
    m = measure(cfg, 12)
    assert m["games"] == 12 and len(m["chars"]) == len(m["answer_tokens"]) >= 10
    assert len(m["chars_within_cap"]) <= len(m["chars"]) and m["cap"] == 10
    # a plan names at least a take and a put, '[{"op": "add", "entry": "<goal>: ..."}]'
    assert min(m["answer_tokens"]) > 10 and max(m["chars"]) > 100
