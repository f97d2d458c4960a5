"""experience.sighting_places: a sighting's tag also names where the look
stood ("[seen at desk 1: statue 1]"), checked against hand-made clips, the
rule readers' lessons (which must not change), real household games'
placements, the extractor's warm-start pairs, and the warm-start keys."""
import re

import numpy as np
import pytest

from crl_jax.envs.alfworld_lessons import (names_sightings, read_every_sighting,
                                           read_sightings)
from crl_jax.envs.alfworld_regularity import placements
from crl_jax.envs.alfworld_text import place_of_look
from crl_jax.rl.prompts import EVERY_OBJECT, trajectory_text
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.lesson_demos import lesson_sft_samples
from crl_jax.training.warm_cache import actor_key, warm_start_key
from experiments.configs import load_preset
from tests.experience.sighting_texts import (ACTIONS, GOAL, OBSERVATIONS, CharTokenizer,
                                            expert_demos)

_TAG = re.compile(r"\[seen at ([^\]:]+): ([^\]]*)\]")


def test_a_tag_names_the_receptacle_its_look_stood_at():
    placed = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="pen", places=True).split(" | ")
    assert placed[0] == "go to desk 1 -> You arrive at desk 1. On the desk 1, ... [seen at desk 1: pen 2]"
    assert placed[3].endswith("... [seen at sidetable 1: pen 1]")
    assert "[" not in placed[1] + placed[2]  # no pen there: no tag, as without places
    # without places the same clips keep the place-less tag
    plain = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="pen").split(" | ")
    assert plain[0].endswith("... [in view: pen 2]")
    assert [s.split(" [")[0] for s in placed] == [s.split(" [")[0] for s in plain]


def test_an_arrival_and_an_opening_name_their_place_and_nothing_else_does():
    assert place_of_look("You arrive at desk 1. On the desk 1, you see a pen 2.") == "desk 1"
    assert place_of_look("You open the drawer 12. The drawer 12 is open. In it, you see nothing.") \
        == "drawer 12"
    assert place_of_look("  You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing.") \
        == "sinkbasin 1"
    for other in ("On the desk 1, you see a pen 2.", "You pick up the pen 2 from the desk 1.",
                  "Nothing happens.", "You close the drawer 1.", "You arrive at desk."):
        assert place_of_look(other) is None


def test_a_look_whose_observation_names_no_place_keeps_the_plain_tag():
    text = trajectory_text(["examine desk 1"], ["On the desk 1, you see a statue 1, and a pen 2."],
                           20, focus="statue", places=True)
    assert text.endswith("[in view: statue 1]")
    assert names_sightings(text) and not names_sightings("go to desk 1 -> You arrive at desk 1.")


def test_every_object_is_tagged_with_its_place_and_read_as_before():
    plain = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT)
    placed = trajectory_text(ACTIONS, OBSERVATIONS, 40, focus=EVERY_OBJECT, places=True)
    assert "[seen at desk 1: desklamp 1, pen 2, statue 1]" in placed
    assert read_every_sighting(GOAL, placed) == read_every_sighting(GOAL, plain)
    assert read_sightings(GOAL, trajectory_text(ACTIONS, OBSERVATIONS, 40, focus="statue",
                                                places=True)) == (
        "statue: go to desk 1 (evidence: desk 1 1/1, shelf 1 0/1, drawer 1 0/1, sidetable 1 0/1)")


@pytest.mark.parametrize("seed", [5])
def test_tags_name_where_real_games_place_the_type_and_lessons_do_not_change(seed):
    """The searching expert's episodes on household games: each tag before
    the first pick-up names a place that holds the objects it names when the
    game starts (the games' own placements), and the rule readers write the
    same lessons from tagged and untagged clips."""
    tags = 0
    for g, demo in expert_demos(16, seed):
        held = {p.otype: p.holders for p in placements(g)}
        otype = g.params["object_target"].lower()
        for focus in (otype, EVERY_OBJECT):
            plain = trajectory_text(demo.actions, demo.observations[1:], 40, focus=focus)
            placed = trajectory_text(demo.actions, demo.observations[1:], 40, focus=focus,
                                     places=True)
            assert read_sightings(demo.goal, placed) == read_sightings(demo.goal, plain)
            assert read_every_sighting(demo.goal, placed) == read_every_sighting(demo.goal, plain)
            before = placed.split(" | take ")[0]  # the actor moves what it takes
            for place, names in _TAG.findall(before):
                for name in names.split(", "):
                    assert place in held[name.rsplit(" ", 1)[0]], (g.id, placed)
                    tags += 1
    assert tags >= 30


def test_the_extractor_is_taught_on_tagged_prompts_with_the_same_answers():
    demos = [demo for _, demo in expert_demos(6, 6)]
    kw = dict(read_shown=True, evidence=True, sightings=True, other_types=2)
    tok = CharTokenizer()
    split = []
    for places in (False, True):
        samples = lesson_sft_samples(demos, tok, np.random.default_rng(0), places=places, **kw)
        texts = ["".join(chr(t) for t in s.tokens) for s in samples]
        split.append([(x[:s.loss_mask.index(1)], x[s.loss_mask.index(1):]) for x, s in
                      zip(texts, samples)])
    plain, placed = split
    assert len(plain) == len(placed) > len(demos)
    assert [a for _, a in plain] == [a for _, a in placed]  # the same lessons taught
    assert all("[seen at " not in p for p, _ in plain)
    assert sum("[seen at " in p for p, _ in placed) >= len(demos)


def test_places_need_sightings_and_key_the_extractor_alone():
    base = apply_overrides(load_preset("alfworld_households_cpu"), [
        "experience.trajectory_sightings=true", "experience.merger=lesson_evidence",
        "warm_start.extractor_reads_shown=true", "warm_start.extractor_writes_evidence=true",
        "warm_start.extractor_sightings=true"])
    placed = apply_overrides(base, ["experience.sighting_places=true"])
    assert base.experience.sighting_places is False  # the paper's transcript by default
    assert warm_start_key(placed) != warm_start_key(base)  # its extractor is taught anew
    assert actor_key(placed) == actor_key(base)  # its actor is shared
    with pytest.raises(ValueError, match="sighting_places.*trajectory_sightings=true"):
        apply_overrides(load_preset("alfworld_households_cpu"), ["experience.sighting_places=true"])
