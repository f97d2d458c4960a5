"""Eq. 6 (retrieval diversification) and Eq. 7 (count-aware reweighting) against hand-computed values."""
import math

import numpy as np
import pytest

from crl_jax.experience import ExtractorTrainingBuffer, count_aware_weight, diversified_scores, select_top_k


def test_eq6_scores_match_hand_computation():
    now = 10_000.0
    scores = diversified_scores([0.9, 0.8, 0.7, 0.6], [3, 0, 1, 0], [now - 10, -math.inf, now - 1000, now - 299.5],
                                now, diversity_lambda=0.4, recency_window=300.0)
    # 0.9 - 0.4*ln 4 - 1 ; 0.8 ; 0.7 - 0.4*ln 2 (outside the window) ; 0.6 - 1 (inside the window)
    np.testing.assert_allclose(scores, [-0.6545177444479562, 0.8, 0.42274112777602189, -0.4], rtol=0, atol=1e-12)
    assert list(select_top_k(scores, 2)) == [1, 2]


def test_eq6_lambda_zero_and_ties_keep_rank_order():
    scores = diversified_scores([0.5, 0.5, 0.4], [5, 0, 0], [-math.inf] * 3, 0.0, diversity_lambda=0.0)
    np.testing.assert_allclose(scores, [0.5, 0.5, 0.4])
    assert list(select_top_k(scores, 3)) == [0, 1, 2]


def test_released_top1_shuffle_moves_a_recent_top1_last():
    rng = np.random.default_rng(0)
    order = select_top_k([0.9, 0.5, 0.1], 3, recent=[True, False, False], shuffle_recent_top1=True,
                         shuffle_prob=1.0, rng=rng)
    assert list(order) == [1, 2, 0]
    order = select_top_k([0.9, 0.5, 0.1], 3, recent=[False, True, False], shuffle_recent_top1=True,
                         shuffle_prob=1.0, rng=rng)
    assert list(order) == [0, 1, 2]


def test_eq7_weights_match_hand_computation():
    w = count_aware_weight([0, 3, 1, 2], [None, 5, 9, 10], step=10, cooldown_delta=1, alpha=0.5)
    np.testing.assert_allclose(w, [1.0, 0.5, 1 / math.sqrt(2), 0.0], atol=1e-12)
    w = count_aware_weight([0, 3, 1, 2], [None, 5, 9, 10], step=10, cooldown_delta=2, alpha=1.0)
    np.testing.assert_allclose(w, [1.0, 0.25, 0.0, 0.0], atol=1e-12)


def test_eq7_rejects_negative_counts():
    with pytest.raises(ValueError, match="train counts"):
        count_aware_weight([-1], [None], step=0)


def test_training_buffer_rewards_and_weights_at_draw_time():
    buffer = ExtractorTrainingBuffer(batch_size=2, cooldown_delta=1, alpha=0.5)
    buffer.add_sample("s1", "p1", "r1", step=0, entry_ids=(1,))
    buffer.add_sample("s2", "p2", "r2", step=0, entry_ids=(2,))
    buffer.add_sample("s3", "p3", "r3", step=0)
    assert buffer.draw(5) is None  # no outcomes yet
    assert buffer.credit("s1", True) and buffer.credit("s1", False) and buffer.credit("s2", True)
    assert not buffer.credit("unknown", True)
    first = buffer.draw(5)
    assert [(i.key, i.reward, i.weight) for i in first] == [("s1", 0.0, 1.0), ("s2", 1.0, 1.0)]
    second = buffer.draw(6)  # c_train = 1, t - t_last = 1 >= delta
    np.testing.assert_allclose([i.weight for i in second], [2 ** -0.5] * 2)
    assert buffer.draw(6) is None  # both trained at step 6 already: cooling down, weight 0
    assert buffer.credit("s3", False)
    assert buffer.draw(6) is None  # s3 is ready, but a batch needs 2 out of cooldown
    third = buffer.draw(7)  # s3 never trained first, then the oldest of the twice-trained
    assert [(i.key, i.train_count) for i in third] == [("s3", 0), ("s1", 2)]
    np.testing.assert_allclose([i.weight for i in third], [1.0, 3 ** -0.5])
