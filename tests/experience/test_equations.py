"""Eq. 6 (retrieval diversification) and Eq. 7 (count-aware reweighting) against hand-computed values."""
import math

import numpy as np
import pytest

from crl_jax.experience import (ExperienceConfig, ExtractorTrainingBuffer, count_aware_weight,
                                diversified_scores, select_top_k)


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


def authors_rerank(n, counts, last_times, now, lam, window, dropout_p, draw):
    """The released code's Eq. 6 (ComplementaryRL ab2574f, async_memory_manager.py
    `_diversify_uids_by_usage`), transcribed: positions 0..n-1 of the search's
    order; a last time of None = never retrieved; `draw()` stands for its
    random.random(). Returns the re-ranked positions (the caller keeps the first k)."""
    scored = []
    for rank in range(n):
        recent = last_times[rank] is not None and (now - last_times[rank]) < window
        penalty = lam * math.log1p(counts[rank]) + (1.0 if recent else 0.0)
        scored.append((-rank - penalty, rank))
    scored.sort(key=lambda x: (x[0], -x[1]), reverse=True)
    out = [rank for _, rank in scored]
    top = out[0]
    if dropout_p and out and last_times[top] is not None and (now - last_times[top]) < window:
        if draw() < dropout_p:
            out = out[1:] + [top]
    return out


def ours_rerank(sims, counts, last_times, now, lam, window, dropout_p, rng, k=None):
    lasts = [-math.inf if t is None else t for t in last_times]
    scores = diversified_scores(sims, counts, lasts, now, lam, window, score="rank")
    recent = (now - np.asarray(lasts)) < window
    return list(select_top_k(scores, k or len(sims), recent, shuffle_recent_top1=dropout_p > 0,
                             shuffle_prob=dropout_p, rng=rng))


def test_eq6_by_rank_matches_hand_computation():
    now = 100.0
    # positions 0..3; 0: 3 retrievals, recent; 1: never; 2: 1 retrieval, long ago; 3: recent
    lasts = [now - 10, -math.inf, now - 1000, now - 299.5]
    scores = diversified_scores([0.9, 0.8, 0.7, 0.6], [3, 0, 1, 0], lasts, now, 0.4, 300.0,
                                score="rank")
    np.testing.assert_allclose(scores, [-(0.4 * math.log(4) + 1), -1.0, -2 - 0.4 * math.log(2), -4.0],
                               rtol=0, atol=1e-12)
    assert list(select_top_k(scores, 4)) == [1, 0, 2, 3]
    # by similarity a penalty of 0.28 reorders close candidates; by rank it moves none
    sims, counts = [0.90, 0.89, 0.5], [1, 0, 0]
    never = [-math.inf] * 3
    assert select_top_k(diversified_scores(sims, counts, never, now), 1)[0] == 1
    assert select_top_k(diversified_scores(sims, counts, never, now, score="rank"), 1)[0] == 0
    with pytest.raises(ValueError, match="score"):
        diversified_scores(sims, counts, never, now, score="cosine")
    with pytest.raises(ValueError, match="diversity_score"):
        ExperienceConfig(diversity_score="cosine")


@pytest.mark.parametrize("case", [
    # (counts, last times (None: never), dropout p): ties, recency, dropout
    ([0, 0, 0, 0], [None] * 4, 0.0),  # no penalty: the search's order
    ([0, 0, 0], [95.0, None, None], 0.0),  # recent top ties with position 1: position 0 stays first
    ([1, 1, 0, 0], [None, None, None, None], 0.0),
    ([2, 0, 5, 0, 1], [99.0, 99.0, None, 0.0, 98.0], 0.0),
    ([0, 0, 0], [95.0, None, None], 1.0),  # recent top-1 dropped to the end
    ([0, 0], [None, 95.0], 1.0),  # top-1 not recent: no dropout
    ([0], [95.0], 1.0),  # a pool of one: the draw is made, nothing moves
])
def test_eq6_by_rank_matches_the_authors_formula_on_hand_made_pools(case):
    counts, lasts, p = case
    sims = np.linspace(0.9, 0.1, len(counts))
    want = authors_rerank(len(counts), counts, lasts, 100.0, 0.4, 10.0, p, np.random.default_rng(0).random)
    got = ours_rerank(sims, counts, lasts, 100.0, 0.4, 10.0, p, np.random.default_rng(0))
    assert got == want


def test_eq6_dropout_draws_like_the_authors_with_a_fixed_generator():
    """Random pools, dropout 0.5: the same generator gives the same orders,
    call after call (the draws are made in the same cases), and the
    recent top-1 goes first about half the time."""
    pools = np.random.default_rng(1)
    theirs, ours = np.random.default_rng(7), np.random.default_rng(7)
    kept = dropped = 0
    for _ in range(300):
        n = int(pools.integers(1, 8))
        counts = pools.integers(0, 4, n).tolist()
        lasts = [None if pools.random() < 0.4 else float(pools.integers(80, 100)) for _ in range(n)]
        sims = np.sort(pools.random(n))[::-1]
        want = authors_rerank(n, counts, lasts, 100.0, 0.4, 10.0, 0.5, theirs.random)
        got = ours_rerank(sims, counts, lasts, 100.0, 0.4, 10.0, 0.5, ours, k=1)
        assert got == want[:1]
        top = authors_rerank(n, counts, lasts, 100.0, 0.4, 10.0, 0.0, None)[0]
        if n > 1 and lasts[top] is not None and 100.0 - lasts[top] < 10.0:  # a recent top-1
            kept, dropped = kept + (got[0] == top), dropped + (got[0] != top)
    assert theirs.random() == ours.random()  # as many draws on both sides
    assert kept > 20 and dropped > 20 and abs(kept - dropped) < 0.3 * (kept + dropped)
