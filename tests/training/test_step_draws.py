"""Which tasks an RL step plays: with train.step_seeded_draws, a step's draw
depends on (train.seed, step) alone, so arms of one seed play the same games."""
from types import SimpleNamespace

import numpy as np

from crl_jax.training.config_io import apply_overrides
from crl_jax.training.step import RunState, play_training_batch
from crl_jax.training.tasks import TaskSource
from experiments.configs import load_preset


class _Engine:
    """Records the tasks it is asked to play and plays none."""

    def __init__(self):
        self.played, self.sampling_stats = [], {"tokens": 0, "seconds": 0.0}

    def play(self, envs, tasks, guided, retriever, seed, ask=None, judge=None):
        self.played.append(list(tasks))
        return []


def _picks(overrides, state: RunState) -> list:
    cfg = apply_overrides(load_preset("alfworld_cpu"),
                          ["train.tasks_per_step=4", "train.group_size=2", "train.seed=5",
                           "experience.mode=none", *overrides])
    engine = _Engine()
    run = SimpleNamespace(cfg=cfg, use_experience=False, manager=None, engine=engine,
                          rl_sources=[TaskSource("alfworld", lambda: None, list(range(100, 140)),
                                                 "alfworld")],
                          train_envs={"alfworld": [None] * 8})
    play_training_batch(run, state)
    return engine.played[0][::2]  # one per group of K = 2


def _state(step: int, consumed: int) -> RunState:
    state = RunState.fresh(5)
    state.step = step
    state.rng.permutation(consumed)  # what another arm's mini-batch shuffles drew
    return state


def test_step_seeded_draws_depend_on_the_seed_and_step_alone():
    on = ["train.step_seeded_draws=true"]
    expected = [100 + i for i in np.random.default_rng((5, 3, 0)).choice(40, 4, replace=False)]
    assert _picks(on, _state(3, 0)) == _picks(on, _state(3, 37)) == expected
    assert _picks(on, _state(4, 0)) != expected  # another step, another draw


def test_run_generator_draws_part_when_another_arm_drew_more():
    # The default: the run's generator, so arms that shuffled different
    # numbers of samples before this step play different games in it.
    assert _picks([], _state(3, 0)) != _picks([], _state(3, 37))
