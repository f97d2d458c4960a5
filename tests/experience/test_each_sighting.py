"""experience.sightings_of=each: one consolidation request per object type a
trajectory's looks showed, each naming that type's sightings and asking
about it (training/step.episode_records), checked against hand-made goals
and trajectories and, on the searching expert's episodes of real household
games, against the every-type lessons (read_every_sighting) it must agree
with."""
import types

import numpy as np
import pytest

from crl_jax.envs.alfworld_households import household_games, households
from crl_jax.envs.alfworld_lessons import (goal_about, goal_object, read_every_sighting,
                                           read_sightings, types_seen)
from crl_jax.envs.registry import make_env, make_expert
from crl_jax.rl.episode import Episode, Turn
from crl_jax.rl.prompts import EVERY_OBJECT, trajectory_text
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.step import episode_records, feed_manager
from crl_jax.training.warmstart import play_expert
from experiments.configs import load_preset
from tests.experience.sighting_texts import ACTIONS, GOAL, OBSERVATIONS, CharTokenizer

ROOM = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
        "around you, you see a shelf 1, a desk 1, and a drawer 1.\n\nYour task is to: look at "
        "statue under the desklamp.")
EACH = ["experience.trajectory_sightings=true", "experience.sightings_of=each",
        "experience.merger=lesson_evidence", "experience.mode=static_online",
        "controls.lesson_reader=rule"]


@pytest.mark.parametrize("goal,otype,restated", [
    ("put a clean mug in sinkbasin.", "pen", "put a clean pen in sinkbasin."),
    ("find two cd and put them in safe", "book", "find two book and put them in safe"),
    ("heat some apple and put it in fridge", "egg", "heat some egg and put it in fridge"),
    ("examine the book with the desklamp", "cd", "examine the cd with the desklamp"),
    ("look at statue under the desklamp", "desklamp", "look at desklamp under the desklamp"),
])
def test_a_goal_restated_about_another_type_names_that_type(goal, otype, restated):
    assert goal_about(goal, otype) == restated
    assert goal_object(goal_about(goal, otype)) == otype


def test_a_sentence_that_is_no_task_is_left_as_it_is():
    assert goal_about("Win the game.", "pen") == "Win the game."


def test_types_seen_are_the_goals_then_each_look_s_in_order():
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT)
    assert types_seen(GOAL, traj) == ["statue", "desklamp", "pen", "book"]
    # the goal's type leads even where no look showed it
    assert types_seen("put a mug in shelf", traj) == ["mug", "desklamp", "pen", "statue", "book"]
    assert types_seen(GOAL, "go to safe 1 -> You arrive at safe 1. The safe 1 is cl...") == []


def _run(overrides, cap=16):
    cfg = apply_overrides(load_preset("alfworld_households_cpu"),
                          [*overrides, f"experience.bank.max_ops_per_call={cap}"])
    submitted = []
    manager = types.SimpleNamespace(submit_episode=submitted.append, merge=lambda *a: None)
    return types.SimpleNamespace(cfg=cfg, manager=manager), submitted


def _episode(goal, actions, observations, first=ROOM):
    turns = [Turn([], [], np.zeros(0), a, a, o, 0.0, (), False)
             for a, o in zip(actions, observations)]
    return Episode(task=0, task_key="alfworld", goal=goal, guided=True, experience_id=7,
                   first_observation=first, turns=turns, won=True, ask_keys=["ask-1"])


def test_each_type_seen_is_asked_about_once_and_credited_once():
    run, submitted = _run(EACH, cap=3)
    feed_manager(run, 4, [_episode(GOAL, ACTIONS, OBSERVATIONS)])
    assert [goal_object(r.goal) for r in submitted] == ["statue", "desklamp", "pen"]  # the cap
    assert submitted[0].goal == GOAL and submitted[1].goal == "look at desklamp under the desklamp"
    for r in submitted:  # each call's clips name its type's objects alone
        assert r.trajectory == trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=goal_object(r.goal))
        assert (r.step, r.success, r.room) == (4, True, "desk 1, drawer 1, shelf 1")
    assert (submitted[0].guiding_entry_id, submitted[0].asked_sample_keys) == (7, ("ask-1",))
    assert all(r.guiding_entry_id is None and r.asked_sample_keys == () for r in submitted[1:])
    # an episode that looked nowhere is asked about its goal, as without "each"
    run, submitted = _run(EACH)
    feed_manager(run, 0, [_episode(GOAL, ["look"], ["Nothing happens."])])
    assert [(r.goal, r.guiding_entry_id) for r in submitted] == [(GOAL, 7)]


def test_other_settings_still_send_one_request_an_episode():
    for overrides, focus in ((EACH[:1], "statue"), ([], ""),
                             ([*EACH[:1], *EACH[2:], "experience.sightings_of=every"],
                              EVERY_OBJECT)):
        run, submitted = _run(overrides)
        feed_manager(run, 0, [_episode(GOAL, ACTIONS, OBSERVATIONS)])
        assert [r.trajectory for r in submitted] == [
            trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=focus)]


def test_each_needs_sightings_and_a_reader_of_them():
    with pytest.raises(ValueError, match="sightings_of=each asks about one type"):
        _run(["experience.trajectory_sightings=true", "experience.sightings_of=each"])
    with pytest.raises(ValueError, match="sightings_of=each asks about one type"):
        _run(EACH[1:])


def test_other_types_are_taught_only_with_sightings_and_never_negative():
    with pytest.raises(ValueError, match="extractor_other_types must be >= 0"):
        _run(["warm_start.extractor_other_types=-1"])
    with pytest.raises(ValueError, match="needs warm_start.extractor_sightings=true"):
        _run(["warm_start.extractor_other_types=2"])


def test_each_types_lesson_is_the_every_type_lesson_on_real_games():
    """The searching expert's episodes on household games: the lesson read
    from each request (read_sightings on its type's clips and its restated
    goal) is the one read_every_sighting gives that type from the clips
    that name every object."""
    games = household_games(households(4), 12, seed=3, home_rate=0.8)
    env = make_env("alfworld", games=games, max_steps=20)
    run, submitted = _run(EACH, cap=50)
    compared = 0
    for t in range(len(games)):
        demo = play_expert(env, t, make_expert("alfworld"), 20, "alfworld")
        submitted.clear()
        feed_manager(run, 0, [_episode(demo.goal, demo.actions, demo.observations[1:],
                                       demo.observations[0])])
        every = read_every_sighting(demo.goal, trajectory_text(
            demo.actions, demo.observations[1:], 40, focus=EVERY_OBJECT))
        assert [read_sightings(r.goal, r.trajectory) for r in submitted] == every
        compared += len(every)
    env.close()
    assert compared >= 40


def test_the_extractor_is_taught_about_other_types_as_each_asks():
    """warm_start.extractor_other_types: besides its goal's pair, each
    trajectory gives pairs about other types its looks showed, the goal
    restated about that type; on real household games each such lesson
    names that type, and every receptacle it counts found holds the type
    when the game starts (each one counted in vain holds none)."""
    import json

    from crl_jax.envs.alfworld_lessons import parse_lesson
    from crl_jax.envs.alfworld_regularity import placements
    from crl_jax.training.lesson_demos import lesson_sft_samples, prompt_lines
    games = household_games(households(4), 8, seed=4, home_rate=0.8)
    env = make_env("alfworld", games=games, max_steps=20)
    demos = [play_expert(env, t, make_expert("alfworld"), 20, "alfworld") for t in range(len(games))]
    env.close()
    held = [{p.otype: p.holders for p in placements(g)} for g in games]
    kw = dict(read_shown=True, evidence=True, sightings=True, failure_fraction=0.0,
              shown_fraction=0.0)
    tok = CharTokenizer()
    alone = lesson_sft_samples(demos, tok, np.random.default_rng(0), **kw)
    taught = lesson_sft_samples(demos, tok, np.random.default_rng(0), other_types=2, **kw)
    about_others = 0
    for sample in taught:
        text = "".join(chr(t) for t in sample.tokens)
        cut = sample.loss_mask.index(1)
        prompt, answer = text[:cut], text[cut:-1]
        goal, traj = prompt_lines(prompt, "goal", "traj")
        otype = goal_object(goal)
        tags = [n for tag in traj.split("[in view: ")[1:] for n in tag.split("]")[0].split(", ")]
        assert all(n.rsplit(" ", 1)[0] == otype for n in tags)  # its type's objects alone
        op = json.loads(answer)[0]
        if op["op"] != "add":
            continue
        lesson = parse_lesson(op["entry"])
        assert lesson.otype == otype
        acts = [step.split(" -> ")[0] for step in traj.split(" | ")][:-1]  # the last may be cut
        (demo, truth), = [(d, h) for d, h in zip(demos, held)
                          if goal in (d.goal, goal_about(d.goal, otype))
                          and list(d.actions[:len(acts)]) == acts]
        for recep, found, _ in lesson.evidence:
            assert bool(found) == (recep in truth.get(otype, ())), (goal, recep, traj)
        about_others += otype != goal_object(demo.goal)
    assert len(taught) - len(alone) == about_others
    assert len(demos) <= about_others <= 2 * len(demos)
