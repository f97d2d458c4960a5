"""experiments/diagnostics/lesson_ceiling.py: a run's draws replayed, and
the best lesson its earlier games allow, against a brute-force recount."""
import collections

import numpy as np
import pytest

from crl_jax.envs.alfworld_regularity import placements
from crl_jax.training.config_io import apply_overrides
from crl_jax.training.step import seeded_draw
from crl_jax.training.tasks import household_split
from experiments.configs import load_preset
from experiments.diagnostics import lesson_ceiling

SMALL = ["env.households=6", "env.pool_households=2", "env.unseen_households=1",
         "env.num_generated=60", "env.home_rate=0.8", "train.step_seeded_draws=true",
         "train.steps=8", "train.tasks_per_step=3"]


def _brute_force(cfg) -> list[dict]:
    """Each step's games, and for each the majority holder over every
    earlier step's game of the same household and type, recounted from
    scratch."""
    split = household_split(cfg)
    pool = [i for i in range(cfg.env.num_generated) if i % cfg.env.households < 2]
    steps = [[split.game(pool[k]) for k in seeded_draw(cfg.train, s, 0, len(pool))]
             for s in range(cfg.train.steps)]
    homes = {h.index: h for h in split.rl_members()}

    def pair_of(g):
        return int(g.id.split("household_")[1].split("/")[0]), g.params["object_target"].lower()

    def holders(g, otype=None):
        return {p.otype: p.holders for p in placements(g)}.get(otype or pair_of(g)[1], ())

    def majority(g, earlier_games):
        votes, order = collections.Counter(), []
        for earlier in earlier_games:
            for r in sorted(holders(earlier, pair_of(g)[1])):
                votes[r] += 1
                order += [r] if r not in order else []
        return max(order, key=lambda r: (votes[r], -order.index(r))) if order else None

    rows = []
    for s, games in enumerate(steps):
        shares = collections.Counter()
        for g in games:
            past = [e for step in steps[:s] for e in step if pair_of(e)[0] == pair_of(g)[0]]
            best = majority(g, [e for e in past if pair_of(e) == pair_of(g)])
            best_every = majority(g, past)  # the type's holders in every earlier game
            first = homes[pair_of(g)[0]].home_names(pair_of(g)[1])[0]
            shares["met"] += best is not None
            shares["first home"] += best == first
            shares["holds it"] += best is not None and best in holders(g)
            shares["oracle"] += first in holders(g)
            shares["every type"] += best_every is not None and best_every in holders(g)
        rows.append({k: shares[k] / len(games)
                     for k in ("met", "first home", "holds it", "oracle", "every type")})
    return rows


def test_the_replay_matches_a_recount_from_scratch():
    cfg = apply_overrides(load_preset("alfworld_households_cpu"), SMALL)
    rows = lesson_ceiling.replay(cfg)
    expected = _brute_force(cfg)
    assert len(rows) == cfg.train.steps
    for got, want in zip(rows, expected):
        assert {k: got[k] for k in want} == pytest.approx(want)
    assert rows[0]["met"] == 0.0  # nothing played before the first step
    assert any(r["met"] > 0 for r in rows) and any(r["oracle"] > 0 for r in rows)
    # every game of a household teaches its types, goal or not
    assert sum(r["every type"] for r in rows) > sum(r["holds it"] for r in rows)
    mean = lesson_ceiling.summary(rows)
    assert mean["oracle"] == pytest.approx(np.mean([r["oracle"] for r in expected]))


def test_draws_are_the_seed_and_steps_and_a_split_game_is_its_generated_one():
    train = apply_overrides(load_preset("alfworld_households_cpu"), SMALL).train
    a, b = seeded_draw(train, 3, 0, 40), seeded_draw(train, 3, 0, 40)
    assert list(a) == list(b) and len(set(a)) == 3
    assert list(seeded_draw(train, 4, 0, 40)) != list(a)
    split = household_split(apply_overrides(load_preset("alfworld_households_cpu"), SMALL))
    assert split.games("generated", 12)[7] == split.game(7)


def test_a_run_without_seeded_draws_is_a_clear_error(capsys):
    code = lesson_ceiling.main(["--env.households=6", "--env.pool_households=2",
                                "--env.unseen_households=1", "--env.num_generated=60"])
    assert code == 2 and "step_seeded_draws" in capsys.readouterr().err
