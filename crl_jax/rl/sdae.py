"""SDAE: subtask-decomposed advantage estimation, as RECONSTRUCTED here.

Only the RLDS abstract (arXiv 2609.27035) is public, so this module is the
project's reconstruction (PAPER.md section 3), not the authors' code:

    shares     R_ij, sum_j R_ij = R_i          subtask_shares / batch_subtask_credit
    subtask    A_ij = (R_ij - mean_k R_kj) / (std_k R_kj + eps)   sdae_subtask_advantages
    turn       A_it = sum_j beta_j * A_ij * kappa_j(t)            sdae_turn_advantages
    mixing     mix * A_it + (1 - mix) * A_i (split-GRPO / GRPO)   combine_with_outcome
    all four for a batch, one array per episode                   sdae_episode_turn_advantages

Subtask events come from the environments (StepInfo.subtask_events, e.g.
ALFWorld's locate / take / clean / place, the last one being the win).
Per-turn advantages reach the tokens through `crl_jax.rl.rollout.Episode.samples`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from crl_jax.rl.advantages import check_rewards, group_advantages, group_index

SDAE_KERNELS = ("step", "gaussian")
SHARE_OUTCOMES = ("residual", "final")


def subtask_event_turns(events_per_turn, subtasks, *, initial_events=()) -> np.ndarray:
    """The turn at which each subtask's event first fired; -1 if it never did.

    events_per_turn[t] holds the events the environment reported after the
    actor's action of turn t (StepInfo.subtask_events); later repeats of an
    event are ignored. `initial_events` (reported by reset, before any
    action) count as turn 0: no earlier action could have earned them, and
    group-relative advantages cancel them when all episodes start alike.
    """
    names = tuple(subtasks)
    if len(set(names)) != len(names):
        raise ValueError(f"subtask names must be unique, got {names}")
    index = {name: j for j, name in enumerate(names)}
    turns = np.full(len(names), -1, dtype=np.int64)
    for t, events in enumerate([initial_events, *events_per_turn]):
        if isinstance(events, str):  # a bare string would iterate over characters
            raise ValueError(f"events of turn {t - 1} must be a sequence of names, got the string {events!r}")
        for name in events:
            if name not in index:
                raise ValueError(f"unknown subtask event {name!r} at turn {t - 1}; valid: {names}")
            if turns[index[name]] < 0:
                turns[index[name]] = max(t - 1, 0)
    return turns


def _beta_vector(beta, subtasks) -> np.ndarray:
    """beta as floats aligned with `subtasks`: None -> all 1; a mapping
    {name: weight} (names missing -> 1, names of other task types ignored);
    or a sequence of len(subtasks)."""
    names = tuple(subtasks)
    if beta is None:
        b = np.ones(len(names))
    elif hasattr(beta, "get"):
        b = np.array([float(beta.get(name, 1.0)) for name in names])
    else:
        b = np.asarray(beta, dtype=np.float64)
        if b.shape != (len(names),):
            raise ValueError(f"beta must have {len(names)} values (one per subtask {names}), got shape {b.shape}")
    if not np.all(np.isfinite(b)) or np.any(b < 0) or (len(b) and b.sum() <= 0):
        raise ValueError(f"beta must be finite, >= 0 and not all 0, got {b.tolist()}")
    return b


def subtask_shares(events_per_turn, subtasks, reward: float, *, beta=None, success_reward: float = 1.0,
                   outcome: str = "residual", initial_events=()) -> np.ndarray:
    """SDAE shares R_ij (reconstruction, PAPER.md section 3): the split of one episode's reward.

    With q_j = beta_j / sum(beta) and S = success_reward (the reward of a
    successful episode), every NON-final subtask j earns q_j * S when its
    event first fires (0 if never). The final subtask (the last of the
    taxonomy; in ALFWorld its event is the win) carries the outcome:
      outcome="residual": R_iJ = R_i - sum_{j<J} R_ij, so sum_j R_ij = R_i
        exactly. A success with all events gets q_j * S each; a failure's
        progress credit is balanced by a negative final share.
      outcome="final": R_iJ = R_i - (1 - q_J) * S: equal to "residual" for a
        success with every event, but independent of a failure's progress,
        so progress is pure partial credit (sum_j R_ij = R_i + progress
        - (1 - q_J) * S; the constant cancels in the group-relative step).
    """
    if outcome not in SHARE_OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; valid: {SHARE_OUTCOMES}")
    if not np.isfinite(reward) or not np.isfinite(success_reward):
        raise ValueError(f"reward and success_reward must be finite, got {reward}, {success_reward}")
    names = tuple(subtasks)
    if not names:
        raise ValueError("SDAE needs at least one subtask")
    q = _beta_vector(beta, names)
    q = q / q.sum()
    reached = subtask_event_turns(events_per_turn, names, initial_events=initial_events) >= 0
    shares = q * success_reward * reached
    if outcome == "residual":
        shares[-1] = reward - shares[:-1].sum()
    else:
        shares[-1] = reward - (1.0 - q[-1]) * success_reward
    return shares


@dataclasses.dataclass(frozen=True)
class SubtaskCredit:
    """A batch's SDAE inputs, padded to the largest taxonomy (J_max).

    shares [E, J_max] (pad 0), event_turns [E, J_max] (pad -1), beta
    [E, J_max] (pad 0), num_subtasks [E], num_turns [E]."""

    shares: np.ndarray
    event_turns: np.ndarray
    beta: np.ndarray
    num_subtasks: np.ndarray
    num_turns: np.ndarray


def batch_subtask_credit(events_per_episode, subtasks_per_episode, rewards, *, beta=None,
                         success_reward: float = 1.0, outcome: str = "residual",
                         initial_events_per_episode=None) -> SubtaskCredit:
    """`subtask_shares` and `subtask_event_turns` for a batch of episodes."""
    r = check_rewards(rewards)
    n = len(r)
    if len(events_per_episode) != n or len(subtasks_per_episode) != n:
        raise ValueError(f"need one events list and one subtask list per episode ({n}), got "
                         f"{len(events_per_episode)} and {len(subtasks_per_episode)}")
    initial = initial_events_per_episode if initial_events_per_episode is not None else [()] * n
    if len(initial) != n:
        raise ValueError(f"initial_events_per_episode has {len(initial)} entries, expected {n}")
    j_max = max((len(s) for s in subtasks_per_episode), default=0)
    shares, turns, betas = np.zeros((n, j_max)), np.full((n, j_max), -1, np.int64), np.zeros((n, j_max))
    for i, (events, names) in enumerate(zip(events_per_episode, subtasks_per_episode)):
        k = len(names)
        shares[i, :k] = subtask_shares(events, names, r[i], beta=beta, success_reward=success_reward,
                                       outcome=outcome, initial_events=initial[i])
        turns[i, :k] = subtask_event_turns(events, names, initial_events=initial[i])
        betas[i, :k] = _beta_vector(beta, names)
    return SubtaskCredit(shares, turns, betas, np.array([len(s) for s in subtasks_per_episode], np.int64),
                         np.array([len(e) for e in events_per_episode], np.int64))


def _num_subtasks(num_subtasks, n: int, j: int) -> np.ndarray:
    k = np.full(n, j, np.int64) if num_subtasks is None else np.asarray(num_subtasks)
    if k.shape != (n,) or k.dtype.kind not in "iu" or np.any(k < 0) or np.any(k > j):
        raise ValueError(f"num_subtasks must be {n} ints in [0, {j}], got {num_subtasks}")
    return k


def sdae_subtask_advantages(shares, group_ids, *, num_subtasks=None, normalize_std: bool = True,
                            eps: float = 1e-6, ddof: int = 1) -> np.ndarray:
    """SDAE A_ij (reconstruction, PAPER.md section 3): A_ij = (R_ij - mean_k R_kj) / (std_k R_kj + eps).

    Group-relative over the episodes k of the same group (pass the task ids,
    or `split_group_ids` to match split-GRPO), separately for every subtask
    column j, with `group_advantages`' conventions (ddof, degenerate -> 0).
    Padded columns (j >= num_subtasks[i]) get 0; all episodes of a group must
    share one taxonomy size.
    """
    s = np.asarray(shares, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"shares must be [episodes, subtasks], got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("shares contain NaN/inf")
    g = group_index(group_ids, s.shape[0])
    k = _num_subtasks(num_subtasks, *s.shape)
    for group in np.unique(g):
        if len(np.unique(k[g == group])) > 1:
            raise ValueError(f"episodes of group {group} have different numbers of subtasks {np.unique(k[g == group])}")
    adv = np.stack([group_advantages(s[:, j], g, normalize_std=normalize_std, eps=eps, ddof=ddof)
                    for j in range(s.shape[1])], axis=1) if s.shape[1] else np.zeros(s.shape)
    return np.where(np.arange(s.shape[1])[None, :] < k[:, None], adv, 0.0)


def _step_kernel(event_turns: np.ndarray, num_turns: int) -> np.ndarray:
    """[T, J] hard assignment: turn t credits the subtask(s) of the first event at or after t;
    turns after every event credit the unreached subtasks (or the last event's)."""
    reached = event_turns >= 0
    e = np.where(reached, event_turns, np.inf)[None, :].astype(np.float64)
    t = np.arange(num_turns, dtype=np.float64)[:, None]
    first = np.where(e >= t, e, np.inf).min(axis=1, keepdims=True)
    assign = (e == first) & np.isfinite(first)
    tail = ~np.isfinite(first[:, 0])
    if tail.any():
        assign[tail] = ~reached if (~reached).any() else (e[0] == e[0].max())
    return assign / assign.sum(axis=1, keepdims=True)


def _gaussian_kernel(event_turns: np.ndarray, num_turns: int, width: float) -> np.ndarray:
    """[T, J] soft assignment: softmax over subtasks of -(t - c_j)^2 / (2 width^2), c_j the
    event turn, or the last turn for an unreached subtask (failure is decided at the end)."""
    centre = np.where(event_turns >= 0, event_turns, num_turns - 1).astype(np.float64)
    t = np.arange(num_turns, dtype=np.float64)[:, None]
    logits = -((t - centre[None, :]) ** 2) / (2.0 * width ** 2)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def sdae_turn_advantages(subtask_advantages, event_turns, num_turns, beta=None, *, kernel: str = "step",
                         width: float = 1.0, num_subtasks=None, max_turns: int | None = None) -> np.ndarray:
    """SDAE A_it (reconstruction, PAPER.md section 3): A_it = sum_j beta_j * A_ij * kappa_j(t).

    kappa is a partition of unity over subtasks (sum_j kappa_j(t) = 1 at every
    turn), so with beta = 1 each turn gets a convex mix of subtask
    advantages, and if all A_ij of an episode are equal (no partial progress
    anywhere in the group) A_it is that value: SDAE reduces to GRPO.
      "step": turn t belongs to the subtask(s) decided at the first event
        turn >= t, i.e. kappa_j = 1 on (previous event turn, e_j], shared
        1/m by m subtasks that fired together; turns after the last event
        belong to the unreached subtasks (or, if all fired, the last ones);
        if the last event is on the last turn, unreached subtasks get none.
      "gaussian": a bump exp(-(t - c_j)^2 / (2 width^2)) at the event turn
        (the last turn for unreached subtasks), normalised over subtasks;
        width -> 0 approaches nearest-event assignment.
    Output [E, max_turns or max(num_turns)], 0 beyond each episode's turns.
    """
    if kernel not in SDAE_KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; valid: {SDAE_KERNELS}")
    if kernel == "gaussian" and not (np.isfinite(width) and width > 0):
        raise ValueError(f"gaussian width must be > 0, got {width}")
    a = np.asarray(subtask_advantages, dtype=np.float64)
    e = np.asarray(event_turns)
    if a.ndim != 2 or e.shape != a.shape or e.dtype.kind not in "iu":
        raise ValueError(f"subtask_advantages and event_turns must be [E, J] (ints for turns), got "
                         f"{a.shape} and {e.dtype} {e.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("subtask_advantages contain NaN/inf")
    n, j = a.shape
    turns = np.asarray(num_turns)
    if turns.shape != (n,) or turns.dtype.kind not in "iu" or np.any(turns < 0):
        raise ValueError(f"num_turns must be {n} ints >= 0, got {num_turns}")
    b = np.ones((n, j)) if beta is None else np.broadcast_to(np.asarray(beta, dtype=np.float64), (n, j))
    if not np.all(np.isfinite(b)):
        raise ValueError("beta contains NaN/inf")
    k = _num_subtasks(num_subtasks, n, j)
    width_t = int(turns.max(initial=0)) if max_turns is None else int(max_turns)
    if width_t < turns.max(initial=0):
        raise ValueError(f"max_turns {max_turns} < the longest episode ({turns.max()} turns)")
    out = np.zeros((n, width_t))
    for i in range(n):
        ti, ki = int(turns[i]), int(k[i])
        if ti == 0 or ki == 0:
            continue  # empty episode or no taxonomy: no turns to credit
        ei = e[i, :ki]
        if np.any(ei < -1) or np.any(ei >= ti):
            raise ValueError(f"episode {i}: event turns {ei.tolist()} must be -1 or in [0, {ti})")
        kappa = _step_kernel(ei, ti) if kernel == "step" else _gaussian_kernel(ei, ti, width)
        out[i, :ti] = kappa @ (b[i, :ki] * a[i, :ki])
    return out


def combine_with_outcome(turn_advantages, episode_advantages, mix: float, *, num_turns=None) -> np.ndarray:
    """mix * A_it (SDAE) + (1 - mix) * A_i (split-GRPO or GRPO), per turn.

    Shapes: turn [E, T] with episode [E] (broadcast over turns), or any
    episode value that broadcasts to turn's shape (a scalar, or per-turn
    values of one episode [T] with turn [T]). mix = 1: SDAE only; mix = 0:
    the episode advantage on every turn. With num_turns ([E], 2-D input
    only), turns beyond each episode's length are set to 0.
    """
    if not (np.isfinite(mix) and 0.0 <= mix <= 1.0):
        raise ValueError(f"mix must be in [0, 1], got {mix}")
    turn = np.asarray(turn_advantages, dtype=np.float64)
    episode = np.asarray(episode_advantages, dtype=np.float64)
    if not (np.all(np.isfinite(turn)) and np.all(np.isfinite(episode))):
        raise ValueError("advantages contain NaN/inf")
    if turn.ndim == 2 and episode.ndim == 1:
        if len(episode) != turn.shape[0]:
            raise ValueError(f"turn_advantages must be [{len(episode)}, T], got shape {turn.shape}")
        episode = episode[:, None]
    elif episode.ndim > turn.ndim or any(
            e not in (1, t) for e, t in zip(episode.shape[::-1], turn.shape[::-1])):  # must broadcast to turn
        raise ValueError(f"episode_advantages of shape {episode.shape} do not fit turn_advantages {turn.shape}")
    out = mix * turn + (1.0 - mix) * episode
    if num_turns is not None:
        steps = np.asarray(num_turns)
        if turn.ndim != 2 or steps.shape != (turn.shape[0],):
            raise ValueError(f"num_turns needs [E, T] turn advantages and E entries, got {steps.shape}, {turn.shape}")
        out = np.where(np.arange(turn.shape[1])[None, :] < steps[:, None], out, 0.0)
    return out


def sdae_episode_turn_advantages(events_per_episode, subtasks_per_episode, rewards, group_ids, *,
                                 beta=None, success_reward: float = 1.0, outcome: str = "residual",
                                 kernel: str = "step", width: float = 1.0, normalize_std: bool = True,
                                 eps: float = 1e-6, ddof: int = 1,
                                 initial_events_per_episode=None) -> list[np.ndarray]:
    """The whole SDAE pipeline for a batch: one array of A_it per episode (len = its turns).

    events_per_episode[i][t]: subtask events after turn t of episode i;
    group_ids: the groups of the outcome advantage (task ids, or
    `split_group_ids` for split-GRPO). An episode without a taxonomy gets one
    implicit subtask carrying its whole reward, so its A_it is its plain
    group advantage on every turn.
    """
    taxonomies = [tuple(names) or ("outcome",) for names in subtasks_per_episode]
    credit = batch_subtask_credit(events_per_episode, taxonomies, rewards, beta=beta,
                                  success_reward=success_reward, outcome=outcome,
                                  initial_events_per_episode=initial_events_per_episode)
    a_ij = sdae_subtask_advantages(credit.shares, group_ids, num_subtasks=credit.num_subtasks,
                                   normalize_std=normalize_std, eps=eps, ddof=ddof)
    turns = sdae_turn_advantages(a_ij, credit.event_turns, credit.num_turns, credit.beta, kernel=kernel,
                                 width=width, num_subtasks=credit.num_subtasks)
    return [turns[i, :t] for i, t in enumerate(credit.num_turns)]
