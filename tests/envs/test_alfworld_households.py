"""Households: reproducible rooms, placement that follows the home rate,
lessons the informed expert uses, and the regularity measure they are
calibrated with (checked against hand-counted cases)."""
from __future__ import annotations

import collections
import math

import pytest

from crl_jax.envs import alfworld_regularity as reg
from crl_jax.envs.alfworld_data import GameRecord
from crl_jax.envs.alfworld_expert import AlfWorldEnvExpert
from crl_jax.envs.alfworld_households import (HOME_WEIGHTS, HouseholdSplit, household_game,
                                              household_games, households, make_household)
from crl_jax.envs.alfworld_lessons import Lesson, lesson_steps, parse_lesson, true_lesson
from crl_jax.envs.alfworld_pddl import parse_problem
from crl_jax.envs.registry import make_env, make_expert
from crl_jax.training.warmstart import play_expert


def _holders(record: GameRecord, otype: str) -> list[str]:
    """Receptacle ids holding objects of ``otype`` (as the PDDL spells them)."""
    spec = parse_problem(record.pddl_problem)
    return [r for o, r in spec.init_inrec if spec.otype.get(o) == f"{otype.lower()}type"]


def test_households_are_reproducible_and_distinct():
    a, b = households(12), households(12)
    assert a == b
    assert len({h.signature for h in a}) == 12
    assert household_game(a[3], 7) == household_game(b[3], 7)
    assert household_game(a[3], 7) != household_game(a[3], 8)
    # a household's games share its room: the same receptacles, ids and all
    for seed in range(5):
        spec = parse_problem(household_game(a[0], seed).pddl_problem)
        assert spec.receptacles == {i.lower() for i, _ in a[0].receptacles}


def test_signature_is_what_the_first_observation_lists():
    h = households(1)[0]
    env = make_env("alfworld", games=household_games([h], 1), max_steps=10)
    obs, _ = env.reset(0)
    room = obs.split("\n\n")[1]
    for name in h.signature:
        assert f"a {name}," in room or f"a {name}." in room
    env.close()


@pytest.mark.parametrize("rate", [0.0, 0.6, 1.0])
def test_placement_follows_the_home_rate(rate):
    """Over 800 games the goal object lies at its first home about as often
    as the rate says: rate * 0.75 + (1 - rate) / n (n receptacles that can
    hold it). Tolerance: 4 binomial standard deviations, at least 0.03."""
    hs = households(8)
    games = household_games(hs, 800, seed=11, home_rate=rate)
    by_index = {h.index: h for h in hs}
    hits, expected = 0, 0.0
    for g in games:
        h = by_index[int(g.id.split("household_")[1].split("/")[0])]
        otype = g.params["object_target"]
        home = h.home_ids(otype)[0]
        parent = g.params["parent_target"]
        spec = parse_problem(g.pddl_problem)
        held = set(_holders(g, otype))
        # the target never starts in a parent receptacle; its homes there do not count
        cands = [r for r in spec.receptacles if (spec.rtype[r], f"{otype.lower()}type")
                 in spec.can_contain and spec.rtype[r] != f"{parent.lower()}type"]
        if home.lower() not in cands:
            continue
        homes = [r.lower() for r in h.home_ids(otype) if r.lower() in cands]
        weight = HOME_WEIGHTS[0] / sum(HOME_WEIGHTS[:len(homes)])
        hits += home.lower() in held
        p_one = rate * weight + (1 - rate) / len(cands)
        copies = sum(1 for o in spec.otype.values() if o == f"{otype.lower()}type")
        expected += 1 - (1 - p_one) ** copies  # any of its copies at the first home
    n = sum(1 for _ in games)
    assert n > 500
    counted = hits / n
    target = expected / n
    tol = max(0.03, 4 * math.sqrt(target * (1 - target) / n))
    assert abs(counted - target) < tol, (counted, target)


def test_rate_zero_is_uniform_and_rate_one_always_home():
    hs = households(6)
    zero = reg.home_hit_rates(reg.pack_placements(household_games(hs, 300, home_rate=0.0)))
    one = reg.home_hit_rates(reg.pack_placements(household_games(hs, 300, home_rate=1.0)))
    assert abs(zero.top1 - zero.chance) < 0.08
    assert one.top2 > 0.95


def test_lesson_round_trip_and_steps():
    lesson = Lesson("mug", ("cabinet 1", "countertop 2"), ("countertop 2", "cabinet 1"))
    assert parse_lesson(lesson.text) == lesson
    assert lesson_steps(lesson.text) == ["go to countertop 2", "go to cabinet 1"]
    assert lesson_steps(lesson, parent="CounterTop") == ["go to cabinet 1"]
    assert parse_lesson("put a mug in cabinet: go to countertop 2 > take mug 1") is None
    assert lesson_steps("not a lesson") == []


def test_informed_expert_with_the_true_homes_beats_searching():
    """At home rate 1 every goal object lies at a home: the expert told the
    household's homes wins every game, in no more actions than searching."""
    hs = households(8)
    games = household_games(hs, 48, seed=5, home_rate=1.0)
    by_index = {h.index: h for h in hs}
    env = make_env("alfworld", games=games, max_steps=60)
    for t, g in enumerate(games):
        h = by_index[int(g.id.split("household_")[1].split("/")[0])]
        search = play_expert(env, t, make_expert("alfworld"), 60, "alfworld")
        told = play_expert(env, t, AlfWorldEnvExpert(lesson_steps(
            true_lesson(h, g.params["object_target"]), g.params["parent_target"])), 60,
            "alfworld")
        assert told.won, g.id
        assert len(told.actions) <= len(search.actions), (g.id, told.actions, search.actions)
    env.close()


def test_no_goal_puts_its_object_where_it_usually_lies():
    """A goal's receptacle is never of the kind of its object's homes (the
    goal empties that receptacle kind of the object), so the lesson's first
    home is always the first place to look: at home rate 1 the first home
    holds the object in every game whose object went to its likeliest home."""
    hs = households(16)
    by_index = {h.index: h for h in hs}
    games = household_games(hs, 400, seed=11, home_rate=1.0)
    kinds_checked = 0
    for g in games:
        h = by_index[int(g.id.split("household_")[1].split("/")[0])]
        kind = dict(h.receptacles)
        homes = dict((t.lower(), ids) for t, ids in h.homes)[g.params["object_target"].lower()]
        if g.params["parent_target"]:
            kinds_checked += 1
            assert g.params["parent_target"] not in {kind[r] for r in homes}, g.id
        held = set(_holders(g, g.params["object_target"]))
        assert held and held <= {r.lower() for r in homes}, g.id  # rate 1: all at a home
    assert kinds_checked > 300


def test_split_keeps_pool_eval_and_unseen_apart():
    split = HouseholdSplit(households=6, pool=2, unseen=2, home_rate=0.65)
    members = split.members()
    train = split.games("generated", 24)
    pool = [g for i, g in enumerate(train) if split.in_pool(i)]
    idx = lambda g: int(g.id.split("household_")[1].split("/")[0])  # noqa: E731
    assert {idx(g) for g in pool} == {members[0].index, members[1].index}
    assert {idx(g) for g in split.games("generated_eval", 8)} <= {idx(g) for g in pool}
    unseen = {idx(g) for g in split.games("generated_unseen", 8)}
    assert unseen == {m.index for m in members[6:]}
    assert not {g.pddl_problem for g in split.games("generated_eval", 8)} & \
        {g.pddl_problem for g in train}


def test_drawn_narrows_rl_to_the_pools_first_households_and_keeps_the_warm_starts():
    whole = HouseholdSplit(households=6, pool=3, unseen=1, home_rate=0.5)
    narrow = HouseholdSplit(households=6, pool=3, unseen=1, home_rate=0.5, drawn=1)
    idx = lambda g: int(g.id.split("household_")[1].split("/")[0])  # noqa: E731
    first = whole.members()[0].index
    train, narrowed = whole.games("generated", 36), narrow.games("generated", 36)
    # The pool's 18 places in the deal all go to its first household ...
    pool = [g for i, g in enumerate(narrowed) if narrow.in_pool(i)]
    assert len(pool) == 18 and {idx(g) for g in pool} == {first}
    assert len({g.pddl_problem for g in pool}) == 18  # 18 distinct games, none repeated
    # ... and the warm start's games are the very same records.
    assert [g for i, g in enumerate(narrowed) if not narrow.in_pool(i)] == \
        [g for i, g in enumerate(train) if not whole.in_pool(i)]
    assert {idx(g) for g in narrow.games("generated_eval", 8)} == {first}
    assert narrow.games("generated_unseen", 4) == whole.games("generated_unseen", 4)
    with pytest.raises(ValueError, match="drawn=4"):
        HouseholdSplit(households=6, pool=3, drawn=4)


def test_task_types_narrow_every_split_and_change_only_the_type_draw():
    kept = ("pick_and_place_simple", "pick_clean_then_place_in_recep")
    whole = HouseholdSplit(households=6, pool=2, unseen=1, home_rate=0.5)
    narrow = HouseholdSplit(households=6, pool=2, unseen=1, home_rate=0.5, task_types=kept)
    for split, n in (("generated", 24), ("generated_eval", 8), ("generated_unseen", 4)):
        assert {g.task_type for g in narrow.games(split, n)} <= set(kept)
    assert {g.task_type for g in narrow.games("generated", 24)} == set(kept)
    # narrowing changes which type a game poses, nothing else: where the
    # two splits draw the same type, the game is the same record
    pairs = list(zip(whole.games("generated", 24), narrow.games("generated", 24)))
    same = [(a, b) for a, b in pairs if a.task_type == b.task_type]
    assert same and all(a == b for a, b in same)
    assert any(a.task_type not in kept for a, _ in pairs)  # the default poses other types
    with pytest.raises(ValueError, match="unknown task types"):
        HouseholdSplit(households=6, pool=2, task_types=("pick_three",))
    # a room without a lamp holder cannot pose look_at_obj_in_light
    room = next(h for h in households(30) if "look_at_obj_in_light" not in h.task_types())
    with pytest.raises(ValueError, match="can pose none of"):
        household_game(room, 0, task_types=("look_at_obj_in_light",))


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="home_rate"):
        household_game(make_household(0), 0, home_rate=1.5)
    with pytest.raises(ValueError, match="distinct receptacle lists"):
        households(40, room_size="small")
    with pytest.raises(ValueError, match="unseen"):
        HouseholdSplit(4, 1).games("generated_unseen", 4)


def _record(plan: str, game: str, target: str, holders: dict) -> GameRecord:
    """A minimal PDDL game: receptacles r -> objects of types listed in holders."""
    objs, init, recs = [], [], []
    n = 0
    for rec, types in holders.items():
        rid = f"{rec}_bar__plus_00_dot_0{len(recs)}"
        recs.append(rid)
        init.append(f"(receptacleType {rid} {rec.capitalize()}Type)")
        for t in types:
            n += 1
            oid = f"{t}_bar__plus_0{n}"
            objs.append(oid)
            init += [f"(objectType {oid} {t.capitalize()}Type)", f"(inReceptacle {oid} {rid})"]
        for t in ("apple", "mug"):
            init.append(f"(canContain {rec.capitalize()}Type {t.capitalize()}Type)")
    init.append("(atLocation agent1 loc_bar_0)")
    objects = "\n".join([f"{o} - object" for o in objs] + [f"{r} - receptacle" for r in recs]
                        + ["agent1 - agent", "loc_bar_0 - location"])
    pddl = (f"(define (problem p)\n(:domain alfred)\n(:objects\n{objects}\n)\n"
            f"(:init\n" + "\n".join(init) + "\n)\n(:goal (and (holds agent1 x)))\n)")
    return GameRecord(f"json_2.1.1/train/pick_and_place_simple-{target}-None-Desk-{plan}/{game}",
                      "train", "pick_and_place_simple", "t",
                      (("object_target", target), ("parent_target", "Desk")), pddl)


def test_regularity_matches_a_hand_count():
    """Floorplan 1, four games with an apple as the goal: the apple lies on
    the desk, desk, shelf, desk. Leaving each out, the others' top home is
    desk, desk, desk, desk: hits 1, 1, 0, 1 (top-1 0.75). The shelf game's
    others never voted for the shelf, so top-2 misses it too (0.75). Chance:
    two receptacles can hold it, so 0.5 each game."""
    games = [_record("1", f"g{i}", "Apple", {"desk": ["apple"] if r == "desk" else [],
                                              "shelf": ["apple"] if r == "shelf" else []})
             for i, r in enumerate(["desk", "desk", "shelf", "desk"])]
    hr = reg.home_hit_rates(reg.pack_placements(games), "instance", "target")
    assert (hr.n, hr.floorplans) == (4, 1)
    assert hr.top1 == pytest.approx(0.75)
    assert hr.chance == pytest.approx(0.5)
    assert hr.top2 == pytest.approx(0.75)


def test_regularity_splits_ties():
    """Two games: the left-out game's only other vote is one shelf; with the
    desk game left out the vote is shelf (miss), with the shelf one desk
    (miss): 0. Add a third game with the apple on both: each tie counts half."""
    both = _record("2", "g3", "Apple", {"desk": ["apple"], "shelf": ["apple"]})
    games = [_record("2", "g1", "Apple", {"desk": ["apple"], "shelf": []}),
             _record("2", "g2", "Apple", {"desk": [], "shelf": ["apple"]}), both]
    hr = reg.home_hit_rates(reg.pack_placements(games), "instance", "target")
    # g1: votes desk 1, shelf 2 -> shelf: miss. g2: desk 2, shelf 1 -> desk: miss.
    # g3: desk 1, shelf 1 tied -> either is a hit: 1.
    assert hr.top1 == pytest.approx(1 / 3)
    counts = collections.Counter(p.floorplan for p in reg.pack_placements(games))
    assert counts == {"2": 3}
