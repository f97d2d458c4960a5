"""warm_start.extractor_writes_evidence: the extractor's warm start is
answered with the lesson its prompt shows and where that episode looked in
vain before its pick-up, the form experience.merger=lesson_evidence merges."""
import re

import pytest

from crl_jax.envs.alfworld_lessons import about_room, read_evidence
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset
from tests.training.test_households_run import _pairs, cfg  # noqa: F401 (a fixture)


def test_each_pair_is_answered_with_what_its_prompt_shows_and_where_it_looked(cfg):  # noqa: F811
    _, shown = _pairs(cfg, 0.0, write_room=False, read_shown=True)
    _, evidence = _pairs(cfg, 0.0, write_room=False, read_shown=True, evidence=True)
    assert [p for p, *_ in shown] == [p for p, *_ in evidence]  # the same prompts
    looked = lost = 0
    for (prompt, room, lesson, entry), (_, _, plain, _) in zip(evidence, shown):
        goal = re.search(r"goal: (.+)", prompt).group(1)
        assert entry == read_evidence(goal, re.search(r"traj: (.+)", prompt).group(1)), prompt
        if plain is not None:  # the home the plain pair names, filed under the prompt's room
            assert lesson.homes == plain.homes[:1] and lesson.room == room
            assert lesson.evidence[0] == (lesson.homes[0], 1, 1)
            looked += len(lesson.evidence) > 1
        elif lesson is not None:  # a lost copy's looks in vain alone
            assert lesson.homes == () and all(f == 0 for _, f, _ in lesson.evidence)
            lost += 1
    assert looked > 0 and lost > 0  # some searches looked elsewhere first; some lost copies looked


def test_a_hand_made_search_and_the_setting_needs_read_shown():
    from crl_jax.training.lesson_demos import shown_evidence
    from crl_jax.training.warmstart import Demo, demo_extractor_prompt
    first = ("-= Welcome =-\n\nYou are in the middle of a room. Looking quickly around you, you "
             "see a cabinet 1, a drawer 1, a drawer 2 and a fridge 1.\n\nYour task is to: x")
    demo = Demo("alfworld", 0, "put a clean apple in fridge",
                [first, "You arrive at drawer 2. On the drawer 2, you see nothing.",
                 "You arrive at drawer 1. On the drawer 1, you see nothing.",
                 "You arrive at cabinet 1. On the cabinet 1, you see a apple 1.",
                 "You pick up the apple 1 from the cabinet 1."],
                ["go to drawer 2", "go to drawer 1", "go to cabinet 1",
                 "take apple 1 from cabinet 1"], True)
    room = "cabinet 1, drawer 1, drawer 2, fridge 1"
    prompt = demo_extractor_prompt(demo, room=room)
    assert shown_evidence(prompt, room.split(", ")) == about_room(
        "apple: go to cabinet 1 (evidence: cabinet 1 1/1, drawer 2 0/1, drawer 1 0/1)", room)
    with pytest.raises(ValueError, match="extractor_reads_shown=true"):
        apply_overrides(load_preset("alfworld_households_cpu"),
                        ["warm_start.extractor_writes_evidence=true"])


def test_sightings_pairs_name_what_each_look_showed(cfg):  # noqa: F811
    """warm_start.extractor_sightings: the same pairs' prompts name the
    goal's objects each clipped observation showed, and each answer is
    read_sightings of its prompt; the expert takes what it sees, so every
    answer with a home names the home the pick-up count names."""
    from crl_jax.envs.alfworld_lessons import read_sightings
    _, picks = _pairs(cfg, 0.0, write_room=False, read_shown=True, evidence=True)
    _, seen = _pairs(cfg, 0.0, write_room=False, read_shown=True, evidence=True, sightings=True)
    assert len(seen) == len(picks)
    marked = 0
    for (prompt, _, lesson, entry), (_, _, picked, _) in zip(seen, picks):
        goal = re.search(r"goal: (.+)", prompt).group(1)
        traj = re.search(r"traj: (.+)", prompt).group(1)
        assert entry == read_sightings(goal, traj), prompt
        marked += "[in view: " in traj
        if lesson is not None and lesson.homes and picked is not None and picked.homes:
            assert lesson.homes == picked.homes, prompt
    assert marked > 0
    with pytest.raises(ValueError, match="extractor_sightings"):
        apply_overrides(load_preset("alfworld_households_cpu"),
                        ["warm_start.extractor_reads_shown=true",
                         "warm_start.extractor_writes_evidence=true",
                         "warm_start.extractor_sightings=true"])
    assert apply_overrides(load_preset("alfworld_households_cpu"), [
        "warm_start.extractor_reads_shown=true", "warm_start.extractor_writes_evidence=true",
        "warm_start.extractor_sightings=true", "experience.trajectory_sightings=true"
    ]).warm_start.extractor_sightings
