"""Advantages of the actor (GRPO, split-GRPO, SDAE) and of the extractor (CISPO).

Host-side NumPy: a step has a few hundred episodes, so clarity beats speed.

Actor, outcome level (one scalar per episode):
  - plain GRPO (no experience) and the "mixed-group" ablation (guided and free
    episodes of a task in ONE mean/std, which the paper reports collapses):
    `group_advantages(rewards, task_ids, ...)`;
  - split-GRPO, paper Eq. 5: `split_grpo_advantages` (statistics per
    (task, subgroup)) and `split_grpo_episode_weights` (its 1/2 sum_c 1/K_c);
  - `episode_advantages(mode, ...)` switches between the three by name.
Actor, turn level: SDAE (PAPER.md section 3, a reconstruction) lives in
`crl_jax.rl.sdae` (built on `group_advantages`; split out to keep files small)
and is mixed with any of the above by `combine_with_outcome`.
Extractor: `extractor_advantages` (paper Eq. 3's A_i). The entry reward r(m)
itself is computed by `crl_jax.experience.training_buffer.ExtractorSample.reward`
and the Eq. 7 weight by `crl_jax.experience.reweighting.count_aware_weight`.
Per-turn advantages reach the tokens through `crl_jax.rl.rollout.Episode.samples`.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

EPISODE_ADVANTAGE_MODES = ("split", "mixed", "grpo")
WEIGHT_SCALES = ("per_task", "mean_one")
FLAT_STD = 1e-6  # a group's std at or below this is no signal (group_advantages)


def check_rewards(rewards, name: str = "rewards") -> np.ndarray:
    """A 1-D finite float64 copy of `rewards`, or ValueError."""
    values = np.asarray(rewards, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per episode), got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        bad = np.flatnonzero(~np.isfinite(values))
        raise ValueError(f"{name} must be finite; NaN/inf at positions {bad.tolist()}")
    return values


def group_index(group_ids: Sequence[Hashable], n: int, name: str = "group_ids") -> np.ndarray:
    """Dense int ids 0..G-1 (first-seen order) for any hashable ids; checks the length."""
    ids = list(group_ids.tolist() if isinstance(group_ids, np.ndarray) else group_ids)
    if len(ids) != n:
        raise ValueError(f"{name} has {len(ids)} entries but there are {n} episodes")
    dense: dict = {}
    try:
        return np.array([dense.setdefault(g, len(dense)) for g in ids], dtype=np.int64)
    except TypeError as err:  # unhashable id such as a list
        raise ValueError(f"{name} must be hashable (int, str, tuple): {err}") from None


def _check_bool_array(values, n: int, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "iuf" or not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{name} must be booleans (or 0/1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    return arr


def group_advantages(rewards, group_ids, *, normalize_std: bool, eps: float = 1e-6,
                     ddof: int = 1) -> np.ndarray:
    """Group-relative advantage: (r - mean_g) / (std_g + eps), or r - mean_g.

    The GRPO advantage within each group g (episodes sharing an id). Used
    over task ids it is plain GRPO (no experience) and the mixed-group
    ablation; over (task, subgroup) ids it is split-GRPO (Eq. 5).

    std is the SAMPLE std (ddof=1) by default because the released code
    (ROLL's `get_score_normalize_fn`, method "mean_std") uses torch's
    `Tensor.std`, which is unbiased; ddof=0 (population std) is available.
    The released config itself uses method "mean" (normalize_std=False).

    Degenerate groups get advantage exactly 0: a group of one episode (no
    baseline; ddof=1 std undefined), a group whose rewards are all equal (no
    signal; exact zero rather than rounding noise) and, with
    normalize_std, a group whose std is at most FLAT_STD = 1e-6, where the
    division would turn rounding noise into advantages. The
    released code zeroes the same groups under "mean_std" (its
    `get_score_normalize_fn` in roll/pipeline/agentic/utils.py: zeros unless
    numel > 1 and std > 1e-6); under "mean" it zeroes none (r - mean of a
    one-episode or flat group is 0 up to rounding).
    """
    r = check_rewards(rewards)
    g = group_index(group_ids, len(r))
    if not isinstance(normalize_std, (bool, np.bool_)):
        raise ValueError(f"normalize_std must be a bool, got {normalize_std!r}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std), got {ddof}")
    if len(r) == 0:
        return r.copy()
    n_groups = int(g.max()) + 1
    count = np.bincount(g, minlength=n_groups).astype(np.float64)
    mean = np.bincount(g, weights=r, minlength=n_groups) / count
    centred = r - mean[g]
    high = np.full(n_groups, -np.inf)
    np.maximum.at(high, g, r)
    low = np.full(n_groups, np.inf)
    np.minimum.at(low, g, r)
    degenerate = (count < 2) | (high == low)
    if normalize_std:
        sq = np.bincount(g, weights=centred ** 2, minlength=n_groups)
        std = np.sqrt(sq / np.maximum(count - ddof, 1.0))
        degenerate |= std <= FLAT_STD
        centred = centred / (std[g] + eps)
    return np.where(degenerate[g], 0.0, centred)


def split_group_ids(task_ids, guided) -> np.ndarray:
    """Dense ids of the (task, subgroup) pairs: the groups of split-GRPO."""
    n = len(task_ids)
    task = group_index(task_ids, n, "task_ids")
    sub = _check_bool_array(guided, n, "guided")
    return group_index(list(zip(task.tolist(), sub.tolist())), n)


def split_grpo_advantages(rewards, task_ids, guided, *, normalize_std: bool = True,
                          eps: float = 1e-6, ddof: int = 1) -> np.ndarray:
    """Paper Eq. 5 (advantage): A_c = (r - mean_c(r)) / std_c(r) within each subgroup.

    Mean and std are taken over the episodes of the same task AND the same
    subgroup c (c = m: guided by an experience entry; c = none: free), never
    across both. normalize_std=False gives the released config's A_c = r - mean_c.
    A task whose rollouts all sit in one subgroup (all-guided or
    no-experience runs) reduces to plain GRPO. Degenerate subgroups -> 0 (see
    `group_advantages`). The 1/2 sum_c 1/K_c weighting is
    `split_grpo_episode_weights`.
    """
    r = check_rewards(rewards)
    return group_advantages(r, split_group_ids(task_ids, guided), normalize_std=normalize_std,
                            eps=eps, ddof=ddof)


def split_grpo_episode_weights(task_ids, guided, *, scale: str = "per_task") -> np.ndarray:
    """Paper Eq. 5 (weighting): the per-episode weight 1/2 * 1/K_c of J(theta).

    With K_c the size of the episode's subgroup within its task, the weight
    is 1 / (P * K_c), P = number of non-empty subgroups of the task (P = 2 in
    the paper's K/2 + K/2 split, giving exactly Eq. 5's 1/2 * 1/K_c; P = 1
    for all-guided or no-experience tasks, giving GRPO's 1/K). Weights sum to
    1 over each task, so for per-episode losses L_i (the episode's own token
    aggregate, e.g. the mean of L_clip over its actor tokens)

        sum_{i in task} weight_i * L_i = Eq. 5's bracket for that task,

    and the batch objective is that sum over all episodes divided by the
    number of tasks.

    scale="mean_one" returns weight_i * n_episodes / n_tasks instead (mean 1
    over the batch). That is the factor the trainer multiplies into each
    episode's advantages (L_clip is positively homogeneous in A, so scaling
    A scales the loss) before the "seq-mean-token-mean" aggregation of
    kernels.aggregation: (1/S) * sum_s mean_t(scaled L) is then exactly Eq. 5
    averaged over tasks, and stays exact across micro-batches because the
    (sum, count) pairs add. For balanced subgroups (K/2 + K/2, equal K per
    task) every factor is 1: seq-mean-token-mean already is Eq. 5.
    """
    if scale not in WEIGHT_SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {WEIGHT_SCALES}")
    n = len(task_ids)
    task = group_index(task_ids, n, "task_ids")
    pair = split_group_ids(task_ids, guided)
    if n == 0:
        return np.zeros(0)
    k_c = np.bincount(pair)[pair].astype(np.float64)
    # number of distinct subgroups present in each task
    n_tasks = int(task.max()) + 1
    pair_task = np.zeros(int(pair.max()) + 1, dtype=np.int64)
    pair_task[pair] = task
    subgroups_per_task = np.bincount(pair_task, minlength=n_tasks)[task].astype(np.float64)
    weight = 1.0 / (subgroups_per_task * k_c)
    if scale == "mean_one":
        weight = weight * n / n_tasks
    return weight


def episode_advantages(mode: str, rewards, task_ids, guided=None, *, normalize_std: bool = True,
                       eps: float = 1e-6, ddof: int = 1) -> np.ndarray:
    """The trainer's switch: "split" (Eq. 5), "mixed" (one group per task,
    the failing ablation) or "grpo" (no experience; one group per task)."""
    if mode not in EPISODE_ADVANTAGE_MODES:
        raise ValueError(f"unknown advantage mode {mode!r}; valid: {EPISODE_ADVANTAGE_MODES}")
    if mode == "split":
        if guided is None:
            raise ValueError("mode 'split' needs the guided flags")
        return split_grpo_advantages(rewards, task_ids, guided, normalize_std=normalize_std,
                                     eps=eps, ddof=ddof)
    return group_advantages(rewards, task_ids, normalize_std=normalize_std, eps=eps, ddof=ddof)


def extractor_advantages(entry_rewards, weights) -> np.ndarray:
    """Paper Eq. 3 (advantage): A_i = (r(m_i) - mean_B(r)) * w(m_i).

    The mean runs over the whole extractor batch B (no std, no groups), and
    includes entries whose weight w is 0 (cooling down), as the released
    code centres all scores of the batch before applying sample weights.
    `entry_rewards` are r(m) (ExtractorSample.reward / TrainingItem.reward),
    `weights` the Eq. 7 weights (TrainingItem.weight).
    """
    r = check_rewards(entry_rewards, "entry_rewards")
    w = check_rewards(weights, "weights")
    if w.shape != r.shape:
        raise ValueError(f"weights has {len(w)} entries, entry_rewards {len(r)}")
    if np.any(w < 0):
        raise ValueError(f"weights must be >= 0, got {w[w < 0].tolist()}")
    if len(r) == 0:
        return r.copy()
    return (r - r.mean()) * w
