"""The ``lessonseen`` guided source: the one home another game of the
household shows, drawn by the households' own placement law (checked against
the law's expected frequencies), played by the informed expert; and
``lessonfirst``, the true lesson cut to its first home."""
import numpy as np
import pytest

from crl_jax.envs.alfworld_generator import CAN_CONTAIN
from crl_jax.envs.alfworld_households import HouseholdSplit
from crl_jax.envs.alfworld_lessons import parse_lesson
from crl_jax.training.guided_demos import parse_mix
from crl_jax.training.lesson_demos import LessonBook, lesson_demo


def _draws(home_rate: float, n: int):
    split = HouseholdSplit(households=12, pool=4, home_rate=home_rate)
    book, rng = LessonBook(split), np.random.default_rng(0)
    games = split.games("generated", n)
    return [(book.household(g), g.params["object_target"], book.seen(g, rng)) for g in games]


def test_at_rate_one_a_seen_lesson_names_one_of_the_homes_three_times_in_four_the_first():
    draws = _draws(1.0, 300)
    first = []
    for household, otype, lesson in draws:
        homes = household.home_names(otype)
        assert lesson.room == household.signature and lesson.otype == otype.lower()
        assert len(lesson.homes) == 1 and lesson.homes[0] in homes
        first.append(lesson.homes[0] == homes[0])
    # HOME_WEIGHTS (0.75, 0.25); sd of the mean sqrt(0.75 * 0.25 / 300) = 0.025: 4 sd
    assert abs(np.mean(first) - 0.75) < 0.1


def test_at_rate_zero_a_seen_lesson_is_a_uniform_holder():
    draws = _draws(0.0, 300)
    hits, expected = [], []
    for household, otype, lesson in draws:
        holders = [household.names[r] for r, t in household.receptacles
                   if otype in CAN_CONTAIN[t].split()]
        assert lesson.homes[0] in holders, (otype, lesson.homes, holders)
        hits.append(lesson.homes[0] == household.home_names(otype)[0])
        expected.append(1.0 / len(holders))
    # uniform over the holders: the first home as often as one holder in len(holders)
    sd = np.sqrt(sum(p * (1 - p) for p in expected)) / len(expected)
    assert abs(np.mean(hits) - np.mean(expected)) < 4 * sd + 1e-9


def test_lessonseen_demo_walks_to_the_seen_home_first():
    from experiments.configs import load_preset
    from crl_jax.training.config_io import apply_overrides
    from crl_jax.training.components import collect_demos, task_sources
    from crl_jax.training.tasks import household_split

    cfg = apply_overrides(load_preset("alfworld_households_cpu"), [
        "env.households=6", "env.pool_households=2", "env.unseen_households=1",
        "env.num_generated=60", "env.num_eval_tasks=8", "warm_start.demos=12"])
    assert parse_mix("lesson:1,lessonseen:1") == [("lesson", 0.5), ("lessonseen", 0.5)]
    train = task_sources(cfg, "generated", None, 30)[0]
    book = LessonBook(household_split(cfg))
    demos = [d for d in collect_demos(cfg, [train]) if d.won][:6]
    env = train.make()
    checked = 0
    for d in demos:
        game = env.games[d.task]
        seen = lesson_demo(d, "lessonseen", train.make, 30, book, np.random.default_rng(1))
        again = lesson_demo(d, "lessonseen", train.make, 30, book, np.random.default_rng(1))
        assert seen.experience == again.experience and seen.actions == again.actions
        lesson = parse_lesson(seen.experience)
        assert seen.source == "lessonseen" and len(lesson.homes) == 1
        assert lesson.room == book.household(game).signature
        if lesson.homes[0].rsplit(" ", 1)[0] != game.params["parent_target"].lower():
            assert seen.actions[0] == f"go to {lesson.homes[0]}"
            checked += 1
        # lessonfirst: the true lesson's first home alone, walked to first
        first = lesson_demo(d, "lessonfirst", train.make, 30, book, np.random.default_rng(1))
        true = parse_lesson(lesson_demo(d, "lesson", train.make, 30, book,
                                        np.random.default_rng(1)).experience)
        cut = parse_lesson(first.experience)
        assert first.source == "lessonfirst" and len(true.homes) >= 2
        assert cut.homes == true.homes[:1] and cut.room == true.room and cut.otype == true.otype
        if cut.homes[0].rsplit(" ", 1)[0] != game.params["parent_target"].lower():
            assert first.actions[0] == f"go to {cut.homes[0]}"
    assert checked


def test_lessonseen_needs_households():
    from experiments.configs import load_preset
    from crl_jax.training.config_io import apply_overrides

    with pytest.raises(ValueError, match="need households"):
        apply_overrides(load_preset("alfworld_cpu"), ["warm_start.guided_source=lessonseen:1"])
