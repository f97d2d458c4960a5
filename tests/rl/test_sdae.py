"""SDAE (reconstruction): shares, subtask and turn advantages against hand values and loops."""
import math

import numpy as np
import pytest

from crl_jax.rl.advantages import group_advantages, split_group_ids, split_grpo_advantages
from crl_jax.rl.sdae import (batch_subtask_credit, combine_with_outcome, sdae_episode_turn_advantages,
                          sdae_subtask_advantages, sdae_turn_advantages, subtask_event_turns, subtask_shares)

CLEAN = ("locate", "take", "clean", "place")
# a failed episode: locate after turn 1, take after turn 3, locate again (ignored) after turn 4
FAIL_EVENTS = [(), ("locate",), (), ("take",), ("locate",), ()]
WIN_EVENTS = [("locate",), ("take",), ("clean",), ("place",)]


def test_event_turns_first_firing_and_reset_events():
    assert subtask_event_turns(FAIL_EVENTS, CLEAN).tolist() == [1, 3, -1, -1]
    # reset events count as turn 0; a later repeat does not move them
    got = subtask_event_turns([(), ("take", "locate")], CLEAN, initial_events=("locate",))
    assert got.tolist() == [0, 1, -1, -1]
    assert subtask_event_turns([], CLEAN).tolist() == [-1, -1, -1, -1]


def test_shares_by_hand():
    # q = 1/4 each; failure (R = 0): locate, take earned .25 each
    # residual: final = 0 - (.25 + .25 + 0) = -.5;  final mode: 0 - (1 - .25) * 1 = -.75
    np.testing.assert_allclose(subtask_shares(FAIL_EVENTS, CLEAN, 0.0), [0.25, 0.25, 0, -0.5])
    np.testing.assert_allclose(subtask_shares(FAIL_EVENTS, CLEAN, 0.0, outcome="final"), [0.25, 0.25, 0, -0.75])
    # success (R = 1), every event: .25 each in both modes
    for outcome in ("residual", "final"):
        np.testing.assert_allclose(subtask_shares(WIN_EVENTS, CLEAN, 1.0, outcome=outcome), [0.25] * 4)
    # beta {"take": 2}: b = [1, 2, 1, 1], q = [.2, .4, .2, .2]; final = 0 - .6
    np.testing.assert_allclose(subtask_shares(FAIL_EVENTS, CLEAN, 0.0, beta={"take": 2.0, "heat": 9.0}),
                               [0.2, 0.4, 0, -0.6])
    # ALFWorld's +1 / -1 rewards, S = 1: failure R = -1 -> final = -1 - .5 = -1.5
    np.testing.assert_allclose(subtask_shares(FAIL_EVENTS, CLEAN, -1.0), [0.25, 0.25, 0, -1.5])
    # residual shares always sum to the reward
    assert subtask_shares(FAIL_EVENTS, CLEAN, 0.3, beta=[3, 1, 1, 5]).sum() == pytest.approx(0.3)


def test_batch_credit_pads_smaller_taxonomies():
    simple = ("locate", "take", "place")
    credit = batch_subtask_credit([FAIL_EVENTS, [("locate",), ("take", "place")]], [CLEAN, simple], [0.0, 1.0])
    np.testing.assert_allclose(credit.shares, [[0.25, 0.25, 0, -0.5], [1 / 3, 1 / 3, 1 / 3, 0]])
    assert credit.event_turns.tolist() == [[1, 3, -1, -1], [0, 1, 1, -1]]
    assert credit.beta.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert credit.num_subtasks.tolist() == [4, 3] and credit.num_turns.tolist() == [6, 2]


SHARES = np.array([[0.25, 0.25, 0.25, 0.25],   # success
                   [0.25, 0.25, 0.0, -0.5],    # failure after locate, take
                   [0.0, 0.0, 0.0, 0.0]])      # failure, nothing


def test_subtask_advantages_by_hand():
    # columns 0, 1: [.25, .25, 0], mean 1/6, centred [1/12, 1/12, -1/6], var (2/144 + 4/144) / 2 = 1/48
    #   -> (1/12) * sqrt(48) = 1/sqrt(3), -(1/6) * sqrt(48) = -2/sqrt(3)
    # column 2: [.25, 0, 0] -> [2, -1, -1] / sqrt(3)
    # column 3: [.25, -.5, 0], mean -1/12, centred [1/3, -5/12, 1/12], var (16 + 25 + 1) / 144 / 2 = 7/48
    #   -> [1/3, -5/12, 1/12] * sqrt(48/7)
    s3, s = math.sqrt(3), math.sqrt(48 / 7)
    expected = np.array([[1 / s3, 1 / s3, 2 / s3, s / 3],
                         [1 / s3, 1 / s3, -1 / s3, -5 * s / 12],
                         [-2 / s3, -2 / s3, -1 / s3, s / 12]])
    np.testing.assert_allclose(sdae_subtask_advantages(SHARES, ["g"] * 3, eps=1e-12), expected, atol=1e-9)


def test_subtask_advantages_columnwise_groups_and_padding():
    rng = np.random.default_rng(3)
    shares = rng.normal(size=(12, 5))
    groups = rng.integers(0, 3, 12)
    got = sdae_subtask_advantages(shares, groups, normalize_std=False)
    for j in range(5):
        np.testing.assert_allclose(got[:, j], group_advantages(shares[:, j], groups, normalize_std=False))
    k = np.array([5, 3, 3, 5])
    padded = sdae_subtask_advantages(shares[:4], [0, 1, 1, 0], num_subtasks=k)
    assert np.all(padded[1:3, 3:] == 0)
    with pytest.raises(ValueError, match="different numbers of subtasks"):
        sdae_subtask_advantages(shares[:4], [0, 0, 1, 1], num_subtasks=k)


def test_step_kernel_by_hand():
    a = np.array([[1.0, 2.0, 3.0, 4.0]])
    # events [1, 3, -1, -1], 6 turns: t0, t1 -> locate (1); t2, t3 -> take (2);
    # t4, t5 after the last event -> unreached clean, place: (3 + 4) / 2
    got = sdae_turn_advantages(a, np.array([[1, 3, -1, -1]]), np.array([6]))
    np.testing.assert_allclose(got, [[1, 1, 2, 2, 3.5, 3.5]])
    # beta [1, 1, 2, 0]: tail = (2 * 3 + 0 * 4) / 2 = 3
    got_b = sdae_turn_advantages(a, np.array([[1, 3, -1, -1]]), np.array([6]), beta=[1, 1, 2, 0])
    np.testing.assert_allclose(got_b, [[1, 1, 2, 2, 3, 3]])
    # co-firing at turn 2 shares 1/2 each: t1, t2 -> (2 + 4) / 2 = 3; t3 after all events -> last ones
    got_c = sdae_turn_advantages(np.array([[1.0, 2.0, 4.0]]), np.array([[0, 2, 2]]), np.array([4]))
    np.testing.assert_allclose(got_c, [[1, 3, 3, 3]])
    # nothing reached: every turn is shared by all subtasks: (1 + 2 + 3 + 4) / 4
    got_n = sdae_turn_advantages(a, np.array([[-1, -1, -1, -1]]), np.array([3]))
    np.testing.assert_allclose(got_n, [[2.5, 2.5, 2.5]])


def test_gaussian_kernel_by_hand():
    # events [1, -1], 3 turns, width 1: centres [1, 2] (unreached -> last turn)
    # t0: logits [-1/2, -2] -> w0 = 1 / (1 + e^-1.5); t1: [0, -1/2] -> 1 / (1 + e^-.5); t2: [-1/2, 0]
    w = [1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(-0.5)), 1 / (1 + math.exp(0.5))]
    expected = [wt * 1.0 + (1 - wt) * 3.0 for wt in w]
    got = sdae_turn_advantages(np.array([[1.0, 3.0]]), np.array([[1, -1]]), np.array([3]), kernel="gaussian")
    np.testing.assert_allclose(got, [expected], atol=1e-12)
    # a narrow bump approaches nearest-event assignment
    narrow = sdae_turn_advantages(np.array([[1.0, 3.0]]), np.array([[0, 3]]), np.array([4]),
                                  kernel="gaussian", width=0.05)
    np.testing.assert_allclose(narrow, [[1, 1, 3, 3]], atol=1e-9)


def _step_reference(a, e, t_len, beta):
    """Turn by turn: the subtasks of the next event, else the unreached, else the last event's."""
    out = []
    for t in range(t_len):
        later = [x for x in e if x >= t]
        if later:
            chosen = [j for j, x in enumerate(e) if x == min(later)]
        elif any(x < 0 for x in e):
            chosen = [j for j, x in enumerate(e) if x < 0]
        else:
            chosen = [j for j, x in enumerate(e) if x == max(e)]
        out.append(sum(beta[j] * a[j] for j in chosen) / len(chosen))
    return out


def test_step_kernel_matches_loop_reference_and_padding():
    rng = np.random.default_rng(4)
    n, j = 30, 5
    turns = rng.integers(0, 9, n)
    k = rng.integers(0, j + 1, n)
    a, beta = rng.normal(size=(n, j)), rng.random((n, j))
    e = np.full((n, j), -1)
    for i in range(n):
        for m in range(k[i]):
            if turns[i] and rng.random() < 0.6:
                e[i, m] = rng.integers(0, turns[i])
    got = sdae_turn_advantages(a, e, turns, beta, num_subtasks=k, max_turns=10)
    assert got.shape == (n, 10)
    for i in range(n):
        ref = _step_reference(a[i, :k[i]], e[i, :k[i]].tolist(), turns[i], beta[i]) if k[i] else [0.0] * turns[i]
        np.testing.assert_allclose(got[i, :turns[i]], ref, atol=1e-12)
        assert np.all(got[i, turns[i]:] == 0)


@pytest.mark.parametrize("kernel", ["step", "gaussian"])
def test_reduces_to_grpo_when_subtask_advantages_agree(kernel):
    # kappa sums to 1 over subtasks at every turn, so equal A_ij give A_it = A_i on every turn
    a = np.repeat(np.array([[0.7], [-1.2]]), 3, axis=1)
    e = np.array([[0, 2, -1], [1, 1, 4]])
    got = sdae_turn_advantages(a, e, np.array([5, 5]), kernel=kernel, width=1.5)
    np.testing.assert_allclose(got, [[0.7] * 5, [-1.2] * 5], atol=1e-12)


def test_end_to_end_with_split_groups_and_outcome_mix():
    events = [WIN_EVENTS, FAIL_EVENTS, [(), ()], [("locate",), ()]]
    rewards = [1.0, 0.0, 0.0, 0.0]
    credit = batch_subtask_credit(events, [CLEAN] * 4, rewards)
    groups = split_group_ids(["t"] * 4, [True, True, False, False])
    a_ij = sdae_subtask_advantages(credit.shares, groups, num_subtasks=credit.num_subtasks, eps=1e-12)
    # free subgroup (episodes 2, 3; both failed, only 3 located at turn 0):
    #   shares [0, 0, 0, 0] and [.25, 0, 0, -.25] (residual)
    #   column 0 [0, .25]: centred -+.125, sample std .125 * sqrt(2) -> -+1/sqrt(2); column 3 -> +-1/sqrt(2)
    h = 1 / math.sqrt(2)
    np.testing.assert_allclose(a_ij[2:], [[-h, 0, 0, h], [h, 0, 0, -h]], atol=1e-9)
    turn = sdae_turn_advantages(a_ij, credit.event_turns, credit.num_turns, credit.beta)
    # episode 2 reached nothing: each turn averages all four: (-h + 0 + 0 + h) / 4 = 0
    # episode 3: turn 0 -> locate (+h); turn 1 -> unreached take, clean, place: (0 + 0 - h) / 3
    np.testing.assert_allclose(turn[2:, :2], [[0, 0], [h, -h / 3]], atol=1e-9)
    assert turn.shape == (4, 6) and np.all(turn[2:, 2:] == 0) and np.all(turn[0, 4:] == 0)
    # mixed with split-GRPO (free subgroup all 0 -> episode advantage 0): mix .5 halves the SDAE part
    outcome = split_grpo_advantages(rewards, ["t"] * 4, [True, True, False, False], eps=1e-12)
    mixed = combine_with_outcome(turn, outcome, 0.5, num_turns=credit.num_turns)
    np.testing.assert_allclose(mixed[3, :2], [h / 2, -h / 6], atol=1e-9)
    # guided: rewards [1, 0] -> +-h; episode 0 (4 turns) keeps .5 * h on top of its SDAE half
    np.testing.assert_allclose(mixed[0, :4], 0.5 * turn[0, :4] + 0.5 * h, atol=1e-9)


def test_episode_pipeline_matches_the_steps_and_handles_missing_taxonomy():
    events = [WIN_EVENTS, FAIL_EVENTS, [(), ()], [("locate",), ()], [(), (), ()], [()]]
    taxonomies = [CLEAN] * 4 + [(), ()]
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    groups = [0, 0, 1, 1, 2, 2]
    got = sdae_episode_turn_advantages(events, taxonomies, rewards, groups, eps=1e-12)
    assert [len(g) for g in got] == [4, 6, 2, 2, 3, 1]
    h = 1 / math.sqrt(2)
    np.testing.assert_allclose(got[3], [h, -h / 3], atol=1e-9)  # as in the end-to-end test above
    # no taxonomy: one implicit subtask with the whole reward -> the plain group advantage, every turn
    np.testing.assert_allclose(got[4], [h] * 3, atol=1e-9)
    np.testing.assert_allclose(got[5], [-h], atol=1e-9)
    credit = batch_subtask_credit(events[:4], taxonomies[:4], rewards[:4])
    a_ij = sdae_subtask_advantages(credit.shares, groups[:4], eps=1e-12)
    steps = sdae_turn_advantages(a_ij, credit.event_turns, credit.num_turns, credit.beta, kernel="gaussian")
    via = sdae_episode_turn_advantages(events[:4], taxonomies[:4], rewards[:4], groups[:4], eps=1e-12,
                                       kernel="gaussian")
    for i in range(4):
        np.testing.assert_allclose(via[i], steps[i, :credit.num_turns[i]], atol=1e-12)


def test_combine_with_outcome_by_hand():
    # .25 * [1, 2, 0] + .75 * 4 = [3.25, 3.5, 3.0]; num_turns 2 zeroes the padding turn
    np.testing.assert_allclose(combine_with_outcome([[1.0, 2.0, 0.0]], [4.0], 0.25), [[3.25, 3.5, 3.0]])
    np.testing.assert_allclose(combine_with_outcome([[1.0, 2.0, 0.0]], [4.0], 0.25, num_turns=[2]),
                               [[3.25, 3.5, 0.0]])
    np.testing.assert_allclose(combine_with_outcome([[1.0, 2.0]], [4.0], 1.0), [[1.0, 2.0]])
    # one episode's turns with per-turn (or scalar) outcome values: .5 * [2, 0] + .5 * [4, 6] = [3, 3]
    np.testing.assert_allclose(combine_with_outcome([2.0, 0.0], [4.0, 6.0], 0.5), [3.0, 3.0])
    np.testing.assert_allclose(combine_with_outcome([2.0, 0.0], 4.0, 0.5), [3.0, 2.0])


def test_empty_episodes():
    got = sdae_turn_advantages(np.ones((2, 2)), np.array([[-1, -1], [0, -1]]), np.array([0, 1]))
    np.testing.assert_allclose(got, [[0.0], [1.0]])
    assert sdae_turn_advantages(np.zeros((0, 3)), np.zeros((0, 3), int), np.zeros(0, int)).shape == (0, 0)
    credit = batch_subtask_credit([[]], [CLEAN], [0.0])
    np.testing.assert_allclose(credit.shares, [[0, 0, 0, 0]])


@pytest.mark.parametrize("call, match", [
    (lambda: subtask_event_turns([("grab",)], CLEAN), "unknown subtask event 'grab'"),
    (lambda: subtask_event_turns(["take"], CLEAN), "the string"),
    (lambda: subtask_event_turns([], ("a", "a")), "unique"),
    (lambda: subtask_shares([], CLEAN, 0.0, outcome="bonus"), "unknown outcome"),
    (lambda: subtask_shares([], CLEAN, float("nan")), "finite"),
    (lambda: subtask_shares([], CLEAN, 0.0, beta=[1, 1]), "4 values"),
    (lambda: subtask_shares([], CLEAN, 0.0, beta=[0, 0, 0, 0]), "not all 0"),
    (lambda: subtask_shares([], (), 0.0), "at least one"),
    (lambda: batch_subtask_credit([[]], [CLEAN, CLEAN], [0.0]), "one events list"),
    (lambda: sdae_subtask_advantages(np.array([[np.nan]]), [0]), "NaN"),
    (lambda: sdae_subtask_advantages(np.ones((2, 2)), [0]), "1 entries"),
    (lambda: sdae_turn_advantages(np.ones((1, 2)), np.array([[0, 0]]), np.array([2]), kernel="box"), "unknown kernel"),
    (lambda: sdae_turn_advantages(np.ones((1, 2)), np.array([[0, 0]]), np.array([2]), kernel="gaussian",
                                  width=0.0), "width"),
    (lambda: sdae_turn_advantages(np.ones((1, 2)), np.array([[0, 5]]), np.array([2])), "event turns"),
    (lambda: sdae_turn_advantages(np.ones((1, 2)), np.array([[0.0, 1.0]]), np.array([2])), "ints"),
    (lambda: sdae_turn_advantages(np.ones((1, 2)), np.array([[0, 1]]), np.array([2]), max_turns=1), "max_turns"),
    (lambda: combine_with_outcome([[1.0]], [1.0], 1.5), "mix"),
    (lambda: combine_with_outcome([[1.0]], [1.0, 2.0], 0.5), "turn_advantages must be"),
    (lambda: combine_with_outcome([1.0, 2.0], [1.0, 2.0, 3.0], 0.5), "do not fit"),
    (lambda: combine_with_outcome([1.0], [np.nan], 0.5), "NaN"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
