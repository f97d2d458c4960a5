"""experience.trajectory_sightings: clipped observations that name the
goal's objects they showed, and lessons counted by what each look showed
(alfworld_lessons.read_sightings), against hand-made trajectories and the
placements of real household games."""
import json

import pytest

from crl_jax.envs.alfworld_households import household_games, households
from crl_jax.envs.alfworld_lesson_merge import merge_lessons
from crl_jax.envs.alfworld_lessons import NO_HOME, parse_lesson, read_evidence, read_sightings
from crl_jax.envs.alfworld_regularity import placements
from crl_jax.envs.registry import make_env, make_expert
from crl_jax.experience.consolidation import ExtractionRequest, ExtractorReply
from crl_jax.rl.prompts import trajectory_text
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.lesson_controls import RuleLessonReader
from crl_jax.training.warmstart import play_expert
from experiments.configs import load_preset

GOAL = "look at statue under the desklamp"
ARRIVE_DESK = "You arrive at desk 1. On the desk 1, you see a desklamp 1, a pen 2, and a statue 1."
ACTIONS = ("go to desk 1", "go to shelf 1", "go to sidetable 1", "take statue 2 from sidetable 1")
OBSERVATIONS = (ARRIVE_DESK, "You arrive at shelf 1. On the shelf 1, you see a book 1.",
                "You arrive at sidetable 1. On the sidetable 1, you see a statue 2, and a statue 3.",
                "You pick up the statue 2 from the sidetable 1.")


def _evidence(lesson: str) -> tuple:
    """The evidence of a lesson as a reader writes it (no room yet)."""
    return parse_lesson(lesson.replace(" (evidence: ", " (room: desk 1) (evidence: ")).evidence


def test_a_clipped_observation_names_the_goals_objects_it_showed():
    plain = trajectory_text(ACTIONS, OBSERVATIONS, 40)
    assert "statue 1" not in plain  # the clip cuts the desk's contents off
    marked = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue")
    steps = marked.split(" | ")
    assert steps[0] == "go to desk 1 -> You arrive at desk 1. On the desk 1, ... [in view: statue 1]"
    assert steps[1] == plain.split(" | ")[1]  # nothing of the type there: no mark
    assert steps[2].endswith("... [in view: statue 2, statue 3]")
    # the pick-up's clip shows its statue itself: nothing to add
    assert steps[3] == "take statue 2 from sidetable 1 -> You pick up the statue 2 from the sid..."
    # whole observations show everything already; another type names nothing
    assert trajectory_text(ACTIONS, OBSERVATIONS, 0, focus="statue") == trajectory_text(
        ACTIONS, OBSERVATIONS, 0)
    assert trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="pencil") == plain
    # "pen" is not the start of "pencil 1", nor "statue" of "statues"
    assert "[in view: pen 2]" in trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="pen")


def test_a_look_that_showed_the_type_counts_where_the_pick_up_does_not():
    """The actor arrives where a statue lies, walks on, and takes one at the
    side table: counted by pick-ups the desk is a look in vain; counted by
    what each look showed, the desk found it first."""
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue")
    assert read_evidence(GOAL, traj) == (
        "statue: go to sidetable 1 (evidence: sidetable 1 1/1, desk 1 0/1, shelf 1 0/1)")
    assert read_sightings(GOAL, traj) == (
        "statue: go to desk 1 (evidence: desk 1 1/1, shelf 1 0/1, sidetable 1 1/1)")
    # each receptacle once, at its first look; a closed container left
    # unopened is no look, one that showed the type when opened is
    again = traj + (" | go to desk 1 -> You arrive at desk 1. On the desk 1, yo..."
                    " | go to safe 1 -> You arrive at safe 1. The safe 1 is cl..."
                    " | go to cabinet 1 -> You arrive at cabinet 1. The cabinet 1 ... [in view: statue 4]"
                    " | open drawer 1 -> You open the drawer 1. The drawer 1 is... [in view: statue 5]")
    assert _evidence(read_sightings(GOAL, again)) == (
        ("desk 1", 1, 1), ("shelf 1", 0, 1), ("sidetable 1", 1, 1), ("cabinet 1", 1, 1),
        ("drawer 1", 1, 1))
    # seen nowhere: a lesson of looks in vain alone; looked nowhere: none
    assert read_sightings(GOAL, traj.split(" | go to sidetable")[0]) == (
        "statue: go to desk 1 (evidence: desk 1 1/1, shelf 1 0/1)")
    shelf_only = "go to shelf 1 -> You arrive at shelf 1. On the shelf 1, y..."
    assert read_sightings(GOAL, shelf_only) == f"statue: {NO_HOME} (evidence: shelf 1 0/1)"
    assert read_sightings(GOAL, "go to safe 1 -> You arrive at safe 1. The safe 1 is cl...") is None
    assert read_sightings("say hello", traj) is None


def test_sightings_merge_to_the_home_that_shows_the_type_most():
    """Three episodes look at the desk first and see a statue there, walk on
    and take one at the side table; counted by pick-ups the side table is
    the home, by sightings the desk (3 of 3 looks) ties the side table
    (3 of 3) and comes first in order, and a fourth episode that saw none
    at the side table settles it."""
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue")
    def roomed(lesson: str) -> str:
        return lesson.replace(" (evidence: ", " (room: desk 1, shelf 1, sidetable 1) (evidence: ")
    picked = merge_lessons([roomed(read_evidence(GOAL, traj))] * 3, keep=1, evidence=True)
    assert parse_lesson(picked[0]).homes == ("sidetable 1",)
    seen = [roomed(read_sightings(GOAL, traj))] * 3 + [
        roomed("statue: go to desk 1 (evidence: sidetable 1 0/1, desk 1 1/1)")]
    merged = parse_lesson(merge_lessons(seen, keep=1, evidence=True)[0])
    assert merged.homes == ("desk 1",)
    assert dict((r, (f, n)) for r, f, n in merged.evidence) == {
        "desk 1": (4, 4), "shelf 1": (0, 3), "sidetable 1": (3, 4)}


@pytest.mark.parametrize("seed", [3])
def test_sightings_match_where_real_games_place_the_type(seed):
    """The searching expert's episodes on household games, clipped to 40
    characters with sightings: every receptacle read_sightings counts found
    holds the goal's type when the game starts, and every look it counts in
    vain holds none (the games' own placements are the reference)."""
    games = household_games(households(4), 24, seed=seed, home_rate=0.8)
    env = make_env("alfworld", games=games, max_steps=20)
    checked = 0
    for t, g in enumerate(games):
        demo = play_expert(env, t, make_expert("alfworld"), 20, "alfworld")
        otype = g.params["object_target"].lower()
        held = {p.otype: p.holders for p in placements(g)}[otype]
        traj = trajectory_text(demo.actions, demo.observations[1:], 40, focus=otype)
        lesson = read_sightings(demo.goal, traj)
        if lesson is None:
            continue
        evidence = _evidence(lesson)
        assert all(bool(found) == (recep in held) for recep, found, _ in evidence), (g.id, traj)
        checked += len(evidence)
    env.close()
    assert checked >= 24  # most episodes look somewhere


def test_the_run_shows_sightings_and_its_rule_reader_counts_them():
    cfg = load_preset("alfworld_households_cpu")
    assert cfg.experience.trajectory_sightings is False  # the paper's transcript by default
    with pytest.raises(ValueError, match="trajectory_sightings.*households"):
        apply_overrides(load_preset("alfworld_cpu"), ["experience.trajectory_sightings=true"])
    assert apply_overrides(cfg, ["experience.trajectory_sightings=true"]).experience.trajectory_sightings

    def extractor(request):
        return ExtractorReply("p", "asked")
    traj = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue")
    request = ExtractionRequest("consolidate", (), GOAL, traj, True, room="desk 1, shelf 1, sidetable 1")
    read = json.loads(RuleLessonReader(extractor, evidence=True, sightings=True)(request).response)
    assert read == [{"op": "add", "entry": read_sightings(GOAL, traj)}]
    by_picks = json.loads(RuleLessonReader(extractor, evidence=True)(request).response)
    assert by_picks == [{"op": "add", "entry": read_evidence(GOAL, traj)}]
