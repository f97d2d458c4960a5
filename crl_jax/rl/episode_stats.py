"""From played episodes to what the learner and the logs need: per-turn
advantages (split-GRPO / mixed / GRPO, optionally with SDAE) and batch metrics."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from crl_jax.rl import advantages as adv_lib
from crl_jax.rl import sdae as sdae_lib
from crl_jax.rl.rollout import Episode
from crl_jax.training.config import AdvantageSpec


def episode_rewards(episodes: Sequence[Episode], spec: AdvantageSpec) -> np.ndarray:
    """Binary outcome reward: success_reward if won, else failure_reward (or
    format_failure_reward for an episode ended by an answer without an action)."""
    bad_format = (spec.failure_reward if spec.format_failure_reward is None
                  else spec.format_failure_reward)
    return np.array([spec.success_reward if e.won else bad_format if e.format_failed
                     else spec.failure_reward for e in episodes])


def turn_advantages(episodes: Sequence[Episode], spec: AdvantageSpec) -> list[np.ndarray]:
    """One advantage per turn of each episode.

    The episode advantage (paper Eq. 5 for "split") is multiplied by the
    episode's Eq. 5 weight 1/(P K_c) rescaled to mean one (see
    advantages.split_grpo_episode_weights), which is exact under the
    seq-mean-token-mean aggregation. Every turn of an episode shares it,
    unless SDAE redistributes credit over the turns where subtasks were decided.
    """
    if not episodes:
        return []
    rewards = episode_rewards(episodes, spec)
    task_ids = [(e.env_name, e.task) for e in episodes]
    guided = [e.guided for e in episodes]
    adv = adv_lib.episode_advantages(spec.mode, rewards, task_ids, guided,
                                     normalize_std=spec.normalize_std)
    if spec.mode == "split":
        adv = adv * adv_lib.split_grpo_episode_weights(task_ids, guided, scale="mean_one")
    turn_adv = [np.full(max(1, len(e.turns)), a, np.float32) for e, a in zip(episodes, adv)]
    if spec.sdae:
        turn_adv = _with_sdae(episodes, turn_adv, spec, task_ids, guided)
    if spec.turn_weighting == "episode":
        turn_adv = episode_balanced(turn_adv)
    if spec.negative_weight != 1.0:
        # Weighted REINFORCE: a weak actor's failed episodes are mostly sensible
        # moves, and pushing all their tokens down spreads mass onto invalid
        # text; scaling negatives by lambda < 1 keeps the update led by wins.
        turn_adv = [np.where(a < 0, a * spec.negative_weight, a).astype(np.float32)
                    for a in turn_adv]
    if not spec.rejected_turn_credit or spec.invalid_action_penalty:
        turn_adv = [rejected_turn_advantages(a, e, spec) for a, e in zip(turn_adv, episodes)]
    return turn_adv


def rejected_turn_advantages(turn_adv: np.ndarray, episode: Episode,
                             spec: AdvantageSpec) -> np.ndarray:
    """Advantages of the turns whose action was rejected (or unparsable):
    min(A_t, 0) when spec.rejected_turn_credit is False (a rejected action
    did nothing, so a win is no evidence for it), minus
    spec.invalid_action_penalty. Other turns are unchanged."""
    if not episode.turns:  # no turns: one placeholder value, nothing rejected
        return turn_adv
    rejected = np.array([t.invalid for t in episode.turns], bool)
    out = turn_adv.astype(np.float32).copy()
    if not spec.rejected_turn_credit:
        out[rejected] = np.minimum(out[rejected], 0.0)
    out[rejected] -= spec.invalid_action_penalty
    return out


def episode_balanced(turn_adv: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Scales episode i's per-turn advantages by mean_T / T_i.

    Training samples are step-level (one per turn), so under a per-sample
    mean every turn weighs the same and an episode weighs in proportion to
    its length: long failed episodes (run to the turn cap) then outweigh
    short successful ones, and the update mostly pushes sampled tokens down,
    which raises entropy and invalid actions. With this scaling each episode
    carries the same total weight, as one trajectory-level sequence does under
    the paper's seq-mean aggregation (PPO-clip is positively homogeneous in A,
    so the scale can live in the advantage)."""
    lengths = np.array([len(a) for a in turn_adv], np.float64)
    mean_len = lengths.mean() if len(lengths) else 1.0
    return [(a * (mean_len / n)).astype(np.float32) for a, n in zip(turn_adv, lengths)]


def _with_sdae(episodes, turn_adv, spec, task_ids, guided):
    groups = (adv_lib.split_group_ids(task_ids, guided) if spec.mode == "split"
              else adv_lib.group_index(task_ids, len(task_ids)))
    sdae = sdae_lib.sdae_episode_turn_advantages(
        [[t.events for t in e.turns] for e in episodes], [e.subtasks for e in episodes],
        episode_rewards(episodes, spec), groups)
    return [sdae_lib.combine_with_outcome(s, a, spec.sdae_mix).astype(np.float32)
            for s, a in zip(sdae, turn_adv)]


def free_outcome_baselines(episodes: Sequence[Episode]) -> list[float]:
    """Per episode: the mean +1 / -1 outcome of the free (unguided) episodes
    of its task in this batch, 0 where the task has none. What a guided
    outcome is measured against under controls.reward_baseline="free"."""
    outcomes: dict[tuple, list[float]] = {}
    for ep in episodes:
        if not ep.guided:
            outcomes.setdefault((ep.env_name, ep.task), []).append(1.0 if ep.won else -1.0)
    return [float(np.mean(outcomes[(ep.env_name, ep.task)]))
            if (ep.env_name, ep.task) in outcomes else 0.0 for ep in episodes]


def batch_metrics(episodes: Sequence[Episode], prefix: str = "") -> dict[str, float]:
    if not episodes:
        return {}
    won = np.array([e.won for e in episodes], float)
    guided = np.array([e.guided for e in episodes], bool)
    actions = np.array([e.num_actions for e in episodes], float)
    turns = [t for e in episodes for t in e.turns]
    out = {
        "success": won.mean(),
        "actions": actions.mean(),
        "episodes": float(len(episodes)),
        "invalid_actions": float(np.mean([t.invalid for t in turns])) if turns else 0.0,
        "tokens_per_action": float(np.mean([len(t.action_ids) for t in turns])) if turns else 0.0,
    }
    if any(e.format_failed for e in episodes):
        out["format_failures"] = float(np.mean([e.format_failed for e in episodes]))
    if won.any():
        out["actions_when_won"] = float(actions[won > 0].mean())
    asks = sum(e.num_asks for e in episodes)
    if asks:
        out["asks_per_episode"] = asks / len(episodes)
    for name, part in (("guided", guided), ("free", ~guided)):
        if not part.any():
            continue
        out[f"success_{name}"] = float(won[part].mean())
        if (won[part] > 0).any():  # the paper's "fewer actions" reads won episodes
            out[f"actions_when_won_{name}"] = float(actions[part & (won > 0)].mean())
    if guided.any():
        out["experience_found"] = float(np.mean([e.retrieved is not None
                                                 for e in episodes if e.guided]))
        out["retrieval_s_per_query"] = float(np.mean([e.retrieval_s for e in episodes
                                                      if e.guided]))
    out.update(critic_metrics(episodes))
    return {prefix + k: float(v) for k, v in out.items()}


def critic_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Actor-Critic variant: how the actor judged the entries it was shown
    (shares of accept / refine / reject / unreadable answers) and the time a
    judgement took, per entry (paper App. B reports it beside retrieval's)."""
    judged = [e for e in episodes if e.judgement is not None]
    if not judged:
        return {}
    verdicts = [e.judgement.verdict for e in judged]
    out = {f"critic_{v}": verdicts.count(v) / len(judged) for v in ("accept", "refine", "reject")}
    out["critic_unreadable"] = verdicts.count(None) / len(judged)
    out["critic_s_per_entry"] = float(np.mean([e.judge_s for e in judged]))
    return out


def self_distillation_samples(episodes: Sequence[Episode], render_ids):
    """Fig. 9b: guided episodes that beat their task's free subgroup (reward
    above the free mean), re-rendered without the experience entry, as
    supervised samples (prompt without experience -> the sampled answer).
    ``render_ids`` turns a TurnView into prompt ids (RolloutEngine.prompt_ids)."""
    from crl_jax.rl.batch import Sample

    free: dict = {}
    for e in episodes:
        if not e.guided:
            free.setdefault((e.env_name, e.task), []).append(e.reward)
    samples = []
    for e in episodes:
        base = free.get((e.env_name, e.task))
        if not e.guided or e.experience is None or not base or e.reward <= float(np.mean(base)):
            continue
        for t in e.turns:
            if t.view is None or t.asked is not None or not t.action_ids:
                continue
            p = render_ids(dataclasses.replace(t.view, experience=None))
            samples.append(Sample(p + t.action_ids, [0] * len(p) + [1] * len(t.action_ids)))
    return samples
