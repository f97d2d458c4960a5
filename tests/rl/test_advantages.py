"""Advantages: hand-computed values, a loop-based reference, edge cases, validation."""
import math
import statistics

import numpy as np
import pytest

from crl_jax.rl.advantages import (episode_advantages, extractor_advantages, group_advantages,
                                split_grpo_advantages, split_grpo_episode_weights)
from crl_jax.experience.training_buffer import ExtractorTrainingBuffer

TINY = 1e-12  # eps small enough that hand values hold to ~1e-11

# Four groups: a = 4 episodes, b = all equal, c = single episode, d = 3 episodes.
REWARDS = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 2.0, 0.0, 1.0]
GROUPS = ["a", "a", "a", "a", "b", "b", "c", "d", "d", "d"]


def test_group_advantages_sample_std_by_hand():
    # a: mean 1/4, centred [.75, -.25, -.25, -.25], var (0.5625 + 3 * 0.0625) / 3 = 0.25, std 0.5
    # b: all equal -> 0; c: one episode -> 0
    # d: mean 1, centred [1, -1, 0], var 2 / 2 = 1, std 1
    expected = [1.5, -0.5, -0.5, -0.5, 0, 0, 0, 1, -1, 0]
    got = group_advantages(REWARDS, GROUPS, normalize_std=True, eps=TINY)
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_group_advantages_population_std_by_hand():
    # a: var 0.75 / 4 = 0.1875, std = sqrt(3)/4 -> 0.75 / std = sqrt(3), -0.25 / std = -1/sqrt(3)
    # d: var 2 / 3, std = sqrt(2/3) -> +-sqrt(3/2)
    r3, r32 = math.sqrt(3), math.sqrt(1.5)
    expected = [r3, -1 / r3, -1 / r3, -1 / r3, 0, 0, 0, r32, -r32, 0]
    got = group_advantages(REWARDS, GROUPS, normalize_std=True, eps=TINY, ddof=0)
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_group_advantages_mean_only_by_hand():
    expected = [0.75, -0.25, -0.25, -0.25, 0, 0, 0, 1, -1, 0]
    got = group_advantages(REWARDS, GROUPS, normalize_std=False)
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_default_eps_is_in_the_denominator():
    # group d: 1 / (1 + 1e-6)
    got = group_advantages(REWARDS, GROUPS, normalize_std=True)
    assert got[7] == pytest.approx(1 / (1 + 1e-6), rel=1e-12)


def test_all_equal_rewards_give_exact_zero():
    # 0.1 * 3 has rounding error in a mean; the result must still be exactly 0
    got = group_advantages([0.1, 0.1, 0.1, 7.0], [0, 0, 0, 1], normalize_std=False)
    assert np.array_equal(got, np.zeros(4))



def test_near_constant_group_is_zero_under_mean_std_as_released():
    """The released code's mean_std (ROLL get_score_normalize_fn) zeroes a
    group unless it has 2+ episodes and a (sample) std above 1e-6. Group a
    differs by 1e-7 (std 9.57e-8: zero, where the division alone would give
    +-0.09 to 0.1); group b by 3e-6 (std 2.12e-6: kept, +-1.5e-6 / 3.12e-6)."""
    rewards = [1.0, 1.0 + 1e-7, 1.0, 1.0 + 2e-7, 0.0, 3e-6]
    groups = ["a"] * 4 + ["b"] * 2
    got = group_advantages(rewards, groups, normalize_std=True)
    assert np.array_equal(got[:4], np.zeros(4))
    std_b = 3e-6 / math.sqrt(2)
    np.testing.assert_allclose(got[4:], [-1.5e-6 / (std_b + 1e-6), 1.5e-6 / (std_b + 1e-6)],
                               rtol=1e-9)
    # split-GRPO: the flat guided subgroup is 0, the free one is not
    split = split_grpo_advantages([1.0, 1.0 + 1e-7, 1.0, 0.0], [0] * 4, [True, True, False, False])
    assert np.array_equal(split[:2], [0.0, 0.0]) and split[2] > 0.7
    # r - mean (the released config's "mean") zeroes no near-constant group
    mean_only = group_advantages(rewards, groups, normalize_std=False)
    np.testing.assert_allclose(mean_only[:4], [-7.5e-8, 2.5e-8, -7.5e-8, 1.25e-7], atol=1e-15)


def _loop_reference(rewards, groups, normalize_std, eps, ddof):
    members = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        values = [rewards[i] for i in idx]
        if len(values) < 2 or min(values) == max(values):
            continue
        mean = statistics.fmean(values)
        std = (statistics.stdev if ddof == 1 else statistics.pstdev)(values)
        if normalize_std and std <= 1e-6:  # the released code's mean_std: a flat group is 0
            continue
        for i in idx:
            out[i] = (rewards[i] - mean) / (std + eps) if normalize_std else rewards[i] - mean
    return out


@pytest.mark.parametrize("normalize_std", [True, False])
@pytest.mark.parametrize("ddof", [0, 1])
def test_group_advantages_match_loop_reference(normalize_std, ddof):
    rng = np.random.default_rng(0)
    for trial in range(20):
        n = int(rng.integers(1, 40))
        groups = [f"t{g}" for g in rng.integers(0, 6, n)]
        rewards = rng.choice([0.0, 1.0, -1.0, 0.25], n) if trial % 2 else rng.normal(size=n)
        got = group_advantages(rewards, groups, normalize_std=normalize_std, eps=1e-6, ddof=ddof)
        np.testing.assert_allclose(got, _loop_reference(list(rewards), groups, normalize_std, 1e-6, ddof),
                                   atol=1e-10)


# One task, 8 rollouts: guided rewards [1, 1, 0, 0], free rewards [1, 0, 0, 0].
SPLIT_R = [1, 1, 0, 0, 1, 0, 0, 0]
SPLIT_G = [True] * 4 + [False] * 4


def test_split_grpo_by_hand():
    # guided: mean .5, centred +-.5, var 4 * .25 / 3 = 1/3 -> +-0.5 * sqrt(3) = +-sqrt(3)/2
    # free: as group "a" above: [1.5, -.5, -.5, -.5]
    h = math.sqrt(3) / 2
    got = split_grpo_advantages(SPLIT_R, ["t"] * 8, SPLIT_G, eps=TINY)
    np.testing.assert_allclose(got, [h, h, -h, -h, 1.5, -0.5, -0.5, -0.5], atol=1e-9)
    got_mean = split_grpo_advantages(SPLIT_R, ["t"] * 8, SPLIT_G, normalize_std=False)
    np.testing.assert_allclose(got_mean, [0.5, 0.5, -0.5, -0.5, 0.75, -0.25, -0.25, -0.25], atol=1e-12)


def test_mixed_group_differs_from_split_by_hand():
    # one group of 8, mean 3/8: centred 5/8 (x3) and -3/8 (x5)
    # var = (3 * 25/64 + 5 * 9/64) / 7 = 120 / 448, std = 0.5175491695
    std = math.sqrt(120 / 448)
    hi, lo = 0.625 / std, -0.375 / std
    got = episode_advantages("mixed", SPLIT_R, ["t"] * 8, SPLIT_G, eps=TINY)
    np.testing.assert_allclose(got, [hi, hi, lo, lo, hi, lo, lo, lo], atol=1e-9)
    assert episode_advantages("grpo", SPLIT_R, ["t"] * 8, eps=TINY) == pytest.approx(got)
    assert episode_advantages("split", SPLIT_R, ["t"] * 8, SPLIT_G, eps=TINY) == pytest.approx(
        split_grpo_advantages(SPLIT_R, ["t"] * 8, SPLIT_G, eps=TINY))


def test_split_grpo_separates_tasks_and_matches_loop_reference():
    rng = np.random.default_rng(1)
    tasks = rng.integers(0, 5, 60)
    guided = rng.random(60) < 0.5
    rewards = rng.choice([0.0, 1.0], 60)
    got = split_grpo_advantages(rewards, tasks, guided, eps=1e-6)
    pairs = [(int(t), bool(g)) for t, g in zip(tasks, guided)]
    np.testing.assert_allclose(got, _loop_reference(list(rewards), pairs, True, 1e-6, 1), atol=1e-10)


def test_split_grpo_episode_weights_by_hand():
    # t1: 4 guided + 4 free -> 1 / (2 * 4) = 0.125 each
    # t2: 3 guided + 1 free -> guided 1 / (2 * 3) = 1/6, free 1 / (2 * 1) = 1/2
    # t3: 2 free only (one subgroup) -> 1 / (1 * 2) = 1/2
    tasks = ["t1"] * 8 + ["t2"] * 4 + ["t3"] * 2
    guided = [1, 1, 1, 1, 0, 0, 0, 0] + [1, 1, 1, 0] + [0, 0]
    expected = [0.125] * 8 + [1 / 6] * 3 + [0.5] + [0.5] * 2
    np.testing.assert_allclose(split_grpo_episode_weights(tasks, guided), expected, rtol=1e-12)
    # mean_one: times 14 episodes / 3 tasks; sums to 14
    mean_one = split_grpo_episode_weights(tasks, guided, scale="mean_one")
    np.testing.assert_allclose(mean_one, np.array(expected) * 14 / 3, rtol=1e-12)
    assert mean_one.sum() == pytest.approx(14)


def test_episode_weights_realise_eq5_against_loop():
    # Eq. 5 per task: 1/2 * sum_c 1/K_c * sum_k L_k, averaged over tasks
    rng = np.random.default_rng(2)
    tasks = np.repeat(np.arange(6), 8)
    guided = np.tile([True] * 4 + [False] * 4, 6)
    guided[8:16] = [True, True, True, True, True, True, False, False]  # unbalanced task
    losses = rng.normal(size=len(tasks))
    reference = 0.0
    for t in range(6):
        inner = 0.0
        for c in (True, False):
            members = [losses[i] for i in range(len(tasks)) if tasks[i] == t and guided[i] == c]
            inner += sum(members) / len(members)
        reference += 0.5 * inner
    reference /= 6
    w = split_grpo_episode_weights(tasks, guided)
    assert float(np.sum(w * losses)) / 6 == pytest.approx(reference, rel=1e-12)
    # mean_one with a plain per-episode mean (seq-mean-token-mean over episodes) gives the same
    w1 = split_grpo_episode_weights(tasks, guided, scale="mean_one")
    assert float(np.mean(w1 * losses)) == pytest.approx(reference, rel=1e-12)
    # balanced task: the factor is exactly 1
    np.testing.assert_allclose(w1[tasks == 0], 1.0, rtol=1e-12)


def test_extractor_advantages_by_hand():
    # mean_B r = (1 - 1 + 0.5 + 0) / 4 = 0.125; centred [.875, -1.125, .375, -.125]; times w
    got = extractor_advantages([1.0, -1.0, 0.5, 0.0], [1.0, 0.5, 0.0, 1 / math.sqrt(2)])
    np.testing.assert_allclose(got, [0.875, -0.5625, 0.0, -0.125 / math.sqrt(2)], atol=1e-12)


def test_extractor_advantages_from_training_buffer_items():
    # r(m) and w(m) come from the buffer (ExtractorSample.reward, Eq. 7), not recomputed here
    buf = ExtractorTrainingBuffer(batch_size=3, max_samples=8)
    for key, outcomes in (("a", [True, True]), ("b", [True, False, False, False]), ("c", [False])):
        buf.add_sample(key, "p", "r", step=0)
        for ok in outcomes:
            buf.credit(key, ok)
    items = buf.draw(step=1)
    # r = [1, (1 - 3) / 4 = -0.5, -1]; mean = -0.5 / 3; never trained -> w = 1
    rewards = {"a": 1.0, "b": -0.5, "c": -1.0}
    got = extractor_advantages([it.reward for it in items], [it.weight for it in items])
    mean = -0.5 / 3
    np.testing.assert_allclose(got, [rewards[it.key] - mean for it in items], atol=1e-12)
    # At the same step every sample cools down (t - t_last = 0 < delta = 1,
    # w = 0): no batch is drawn. The zero weights themselves zero the advantages.
    assert buf.draw(step=1) is None
    assert np.array_equal(extractor_advantages([it.reward for it in items], [0.0] * 3), np.zeros(3))
    # The next step they are out of cooldown: w = (1 + 1)^-0.5, advantages scaled by it.
    again = buf.draw(step=2)
    np.testing.assert_allclose(extractor_advantages([it.reward for it in again], [it.weight for it in again]),
                               np.asarray(got) * 2 ** -0.5, atol=1e-12)


def test_empty_batch():
    assert group_advantages([], [], normalize_std=True).shape == (0,)
    assert split_grpo_advantages([], [], np.zeros(0, bool)).shape == (0,)
    assert split_grpo_episode_weights([], np.zeros(0, bool)).shape == (0,)
    assert extractor_advantages([], []).shape == (0,)


@pytest.mark.parametrize("call, match", [
    (lambda: group_advantages([1.0, float("nan")], [0, 0], normalize_std=True), "NaN"),
    (lambda: group_advantages([1.0, 2.0], [0], normalize_std=True), "1 entries but there are 2"),
    (lambda: group_advantages([[1.0]], [0], normalize_std=True), "1-D"),
    (lambda: group_advantages([1.0], [0], normalize_std="yes"), "normalize_std"),
    (lambda: group_advantages([1.0], [0], normalize_std=True, ddof=2), "ddof"),
    (lambda: group_advantages([1.0], [0], normalize_std=True, eps=0.0), "eps"),
    (lambda: group_advantages([1.0], [[0]], normalize_std=True), "hashable"),
    (lambda: split_grpo_advantages([1.0, 0.0], [0, 0], [1, 2]), "booleans"),
    (lambda: split_grpo_advantages([1.0, 0.0], [0, 0], [True]), "shape"),
    (lambda: split_grpo_episode_weights([0], [True], scale="sum"), "unknown scale"),
    (lambda: episode_advantages("dr_grpo", [1.0], [0]), "unknown advantage mode"),
    (lambda: episode_advantages("split", [1.0], [0]), "guided"),
    (lambda: extractor_advantages([1.0, 0.0], [1.0]), "weights has 1"),
    (lambda: extractor_advantages([1.0], [-1.0]), ">= 0"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
