"""controls.reward_baseline="free": an entry is credited with its guided
episodes' outcomes less the mean outcome of the free episodes of the same
task in the same step (hand-computed), the paper's r(m) otherwise."""
import json

import numpy as np
import pytest

from crl_jax.experience import (EpisodeRecord, ExperienceBank, ExperienceConfig, ExperienceManager,
                                ExtractorReply, HashingEmbedder)
from crl_jax.experience.training_buffer import ExtractorTrainingBuffer
from crl_jax.rl.episode_stats import free_outcome_baselines
from crl_jax.rl.rollout import Episode


def _ep(task, guided, won, env="alfworld"):
    return Episode(task=task, task_key=env, goal="g", guided=guided, won=won, env_name=env)


def test_free_baselines_by_hand():
    eps = [_ep("a", True, True), _ep("a", True, False), _ep("a", False, True),
           _ep("a", False, False), _ep("a", False, False),  # free in a: +1 -1 -1 -> -1/3
           _ep("b", True, True),  # b has no free episode: 0
           _ep("a", False, True, env="minihack")]  # another environment's "a": +1
    got = free_outcome_baselines(eps)
    assert got == pytest.approx([-1 / 3] * 5 + [0.0, 1.0])


def test_buffer_reward_is_the_mean_of_outcomes_less_their_baselines():
    buf = ExtractorTrainingBuffer(batch_size=1)
    buf.add_sample("k", "p", "r", step=0)
    buf.credit("k", True, baseline=-1 / 3)  # 1 + 1/3
    buf.credit("k", False, baseline=0.5)  # -1 - 0.5
    assert buf.sample("k").reward == pytest.approx((4 / 3 - 1.5) / 2)
    buf.add_sample("paper", "p", "r", step=0)
    buf.credit("paper", True)
    buf.credit("paper", False)
    assert buf.sample("paper").reward == 0.0  # Eq. 3 as written: mean of +1 and -1


def plan_writing_manager():
    """A synchronous bank and manager whose extractor adds "plan" for a won
    episode and returns nothing for a lost one (shared by the credit tests)."""
    def extractor(request):
        ops = [{"op": "add", "entry": "plan"}] if request.success else [{"op": "return"}]
        return ExtractorReply("prompt", json.dumps(ops))

    config = ExperienceConfig(workers=1, consolidation_context=0, train_batch_size=1)
    bank = ExperienceBank(config, 16)
    return bank, ExperienceManager(bank, HashingEmbedder(16), extractor, config=config,
                                   synchronous=True)


def test_consolidation_credits_the_guiding_entry_with_the_records_baseline():
    bank, manager = plan_writing_manager()
    with bank, manager:
        first = manager.submit_episode(EpisodeRecord("g", "t", True, "x")).result(5)
        entry = first.added_ids[0]
        manager.submit_episode(EpisodeRecord("g", "t", True, "x", entry, 1,
                                             outcome_baseline=0.5)).result(5)
        manager.submit_episode(EpisodeRecord("g", "t", False, "x", entry, 1,
                                             outcome_baseline=-1.0)).result(5)
        sample = manager.training_buffer.sample(first.sample_key)
        assert sample.outcomes == [0.5, 0.0] and np.isclose(sample.reward, 0.25)
