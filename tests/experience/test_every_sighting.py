"""experience.sightings_of=every: clipped observations that name every
object a look showed, and a lesson for each type a trajectory saw
(alfworld_lessons.read_every_sighting), against hand-made trajectories and
the placements of real household games."""
import json

import pytest

from crl_jax.envs.alfworld_households import household_games, households
from crl_jax.envs.alfworld_lessons import NO_HOME, parse_lesson, read_every_sighting, read_sightings
from crl_jax.envs.alfworld_regularity import placements
from crl_jax.envs.alfworld_text import objects_listed
from crl_jax.envs.registry import make_env, make_expert
from crl_jax.experience.consolidation import ExtractionRequest, ExtractorReply
from crl_jax.rl.prompts import EVERY_OBJECT, trajectory_text
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.lesson_controls import RuleLessonReader
from crl_jax.training.warmstart import play_expert
from experiments.configs import load_preset
from tests.experience.sighting_texts import ACTIONS, GOAL, OBSERVATIONS


def _evidence(lesson: str) -> dict:
    lesson = parse_lesson(lesson.replace(" (evidence: ", " (room: desk 1) (evidence: "))
    return {r: f for r, f, _ in lesson.evidence}


def test_a_look_lists_its_objects_and_a_clip_names_those_it_cut():
    assert objects_listed(OBSERVATIONS[0]) == ["desklamp 1", "pen 2", "statue 1"]
    assert objects_listed(OBSERVATIONS[2]) == []
    # a room's and a look's lists name receptacles, not objects
    assert objects_listed("Looking quickly around you, you see a desk 1, and a shelf 1.") == []
    assert objects_listed("You are facing the desk 1. Next to it, you see a shelf 1.") == []
    steps = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT).split(" | ")
    assert steps[0].endswith("... [in view: desklamp 1, pen 2, statue 1]")
    assert steps[1].endswith("... [in view: book 1]")
    assert "[in view" not in steps[2]
    assert steps[3].endswith("... [in view: book 2, pen 1]")
    # whole observations show every object already
    assert trajectory_text(ACTIONS, OBSERVATIONS, 0, focus=EVERY_OBJECT) == trajectory_text(
        ACTIONS, OBSERVATIONS, 0)


def test_one_trajectory_teaches_every_type_it_saw():
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT)
    lessons = read_every_sighting(GOAL, traj)
    heads = [lesson.split(" (evidence")[0] for lesson in lessons]
    # the goal's type first, then each type in the order the looks showed it
    assert heads == ["statue: go to desk 1", "desklamp: go to desk 1", "pen: go to desk 1",
                     "book: go to shelf 1"]
    every_look = {"desk 1": 0, "shelf 1": 0, "drawer 1": 0, "sidetable 1": 0}
    assert _evidence(lessons[2]) == every_look | {"desk 1": 1, "sidetable 1": 1}
    assert _evidence(lessons[3]) == every_look | {"shelf 1": 1, "sidetable 1": 1}
    # the goal's lesson is the one read_sightings reads from the goal-marked clip
    assert lessons[0] == read_sightings(GOAL, trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue"))
    # a goal seen nowhere still gets its looks in vain; other types only where seen
    unseen = read_every_sighting(GOAL, " | ".join(traj.split(" | ")[1:]))
    assert unseen[0] == f"statue: {NO_HOME} (evidence: shelf 1 0/1, drawer 1 0/1, sidetable 1 0/1)"
    assert [lesson.split(":")[0] for lesson in unseen] == ["statue", "book", "pen"]
    assert read_every_sighting(GOAL, "go to safe 1 -> You arrive at safe 1. The safe 1 is cl...") == []


@pytest.mark.parametrize("seed", [5])
def test_every_sighting_matches_where_real_games_place_each_type(seed):
    """The searching expert's episodes on household games: for every type a
    lesson names, each receptacle it counts found holds that type when the
    game starts, and each look it counts in vain holds none of it."""
    games = household_games(households(4), 16, seed=seed, home_rate=0.8)
    env = make_env("alfworld", games=games, max_steps=20)
    checked = 0
    for t, g in enumerate(games):
        demo = play_expert(env, t, make_expert("alfworld"), 20, "alfworld")
        held = {p.otype: p.holders for p in placements(g)}
        traj = trajectory_text(demo.actions, demo.observations[1:], 40, focus=EVERY_OBJECT)
        for lesson in read_every_sighting(demo.goal, traj):
            otype = lesson.split(":")[0]
            for recep, found in _evidence(lesson).items():
                assert bool(found) == (recep in held.get(otype, ())), (g.id, otype, recep, traj)
                checked += 1
    env.close()
    assert checked >= 100


def test_the_rule_reader_writes_every_types_lesson_up_to_its_cap():
    cfg = apply_overrides(load_preset("alfworld_households_cpu"), [
        "experience.trajectory_sightings=true", "controls.lesson_reader=rule",
        "experience.merger=lesson_evidence", "experience.sightings_of=every",
        "experience.mode=static_online"])
    assert cfg.experience.sightings_of == "every"
    with pytest.raises(ValueError, match="sightings_of=every is read by the rule reader"):
        apply_overrides(load_preset("alfworld_households_cpu"), [
            "experience.trajectory_sightings=true", "experience.sightings_of=every"])

    def extractor(request):
        return ExtractorReply("p", "asked")
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT)
    request = ExtractionRequest("consolidate", (), GOAL, traj, True, room="desk 1, shelf 1")
    reader = RuleLessonReader(extractor, evidence=True, sightings=True, every_type=True, max_lessons=3)
    read = json.loads(reader(request).response)
    assert read == [{"op": "add", "entry": e} for e in read_every_sighting(GOAL, traj)[:3]]
    nothing = ExtractionRequest("consolidate", (), GOAL, "look -> Nothing happens.", False, room="")
    assert json.loads(reader(nothing).response) == [{"op": "return"}]
