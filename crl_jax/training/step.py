"""One RL step of the actor: rollouts -> advantages -> actor update, and the
finished episodes handed to the experience manager.

`train_step(run, state) -> (state, metrics)` is what the loop calls; the run
(crl_jax/training/components.py) holds the models and environments, the
state holds what changes from step to step and goes into checkpoints.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from crl_jax.envs.alfworld_lessons import goal_about, goal_object, room_line, types_seen
from crl_jax.experience import EpisodeRecord
from crl_jax.experience.operations import shown_text
from crl_jax.experience.training_buffer import outcome
from crl_jax.rl.batch import pack_samples
from crl_jax.rl.critic import CriticScores, critic_credit
from crl_jax.rl.episode_stats import (batch_metrics, free_outcome_baselines,
                                      self_distillation_samples, turn_advantages)
from crl_jax.rl.prompts import EVERY_OBJECT
from crl_jax.rl.rollout import Episode
from crl_jax.training.components import Run
from crl_jax.training.lesson_controls import ForeignRooms
from crl_jax.training.oracle import oracle_retriever
from crl_jax.training.tasks import household_split


@dataclasses.dataclass
class RunState:
    """What a checkpoint must hold besides the models: RL steps done and the
    generator that picks tasks and shuffles mini-batches."""

    step: int
    rng: np.random.Generator

    @classmethod
    def fresh(cls, seed: int) -> "RunState":
        return cls(step=0, rng=np.random.default_rng(seed))


def retrieve(run: Run, queries: list[str], keys: list[str], record: bool = True):
    """The bank's best entry (text, id) for each query, None where it has none.
    ``record``: count the retrievals as use (Eq. 6's counts and recency);
    evaluation does not, so it never penalises entries for training."""
    per_task = run.cfg.experience.bank.per_task
    futures = run.manager.search_many(list(queries), [k if per_task else "" for k in keys],
                                      record=record)
    out = []
    for f in futures:
        hits = f.result(timeout=run.cfg.experience.bank.thread_timeout_s)
        text = shown_text(hits[0].entry.text) if hits else ""
        # "" is an entry with nothing to read yet (a households lesson of looks in vain alone)
        out.append((text, hits[0].entry.id) if text else None)
    return out


def ask(run: Run, step: int, queries: list[str], keys: list[str]):
    """The search-and-ask tool: the bank's best entry, rewritten by the extractor
    (with controls.ask_answers="nothing": no answer, the rollout says so)."""
    if run.cfg.controls.ask_answers == "nothing":
        return [(None, None)] * len(queries)
    per_task = run.cfg.experience.bank.per_task
    futures = [run.manager.search_and_ask(q, k if per_task else "", step)
               for q, k in zip(queries, keys)]
    timeout = run.cfg.experience.bank.thread_timeout_s * 4
    return [(r.text, r.sample_key) for r in (f.result(timeout=timeout) for f in futures)]


def draw_tasks(rng: np.random.Generator, train, n: int) -> np.ndarray:
    """train.tasks_per_step distinct tasks of ``n`` (all of them if fewer)."""
    return rng.choice(n, size=min(train.tasks_per_step, n), replace=False)


def seeded_draw(train, step: int, index: int, n: int) -> np.ndarray:
    """train.step_seeded_draws: the tasks (of ``n``) step ``step`` plays of
    environment ``index``, drawn by the seed and step alone, so every arm
    of a seed plays the same games at every step."""
    return draw_tasks(np.random.default_rng((train.seed, step, index)), train, n)


def play_training_batch(run: Run, state: RunState) -> tuple[list[Episode], dict]:
    """train.tasks_per_step tasks of each environment's pool, K rollouts each,
    the first round(K * guided_fraction) of a group guided by the bank; and
    the actor's sampled tokens with the seconds the sampler took for them."""
    cfg, t = run.cfg, run.cfg.train
    guided_k = int(round(t.group_size * cfg.experience.guided_fraction)) if run.use_experience else 0
    tools = run.manager is not None and cfg.experience.search_and_ask
    episodes, tokens, sampling_s = [], 0, 0.0
    for index, src in enumerate(run.rl_sources):
        picks = (seeded_draw(t, state.step, index, len(src.tasks)) if t.step_seeded_draws
                 else draw_tasks(state.rng, t, len(src.tasks)))
        tasks = [src.tasks[i] for i in picks for _ in range(t.group_size)]
        guided = [k < guided_k for _ in picks for k in range(t.group_size)]
        episodes += run.engine.play(
            run.train_envs[src.env_name][:len(tasks)], tasks, guided,
            retriever(run, src.env_name, tasks, guided) if any(guided) else None,
            seed=t.seed * 100_003 + state.step,
            ask=(lambda q, k: ask(run, state.step, q, k)) if tools else None,
            judge=cfg.judge)
        tokens += run.engine.sampling_stats["tokens"]
        sampling_s += run.engine.sampling_stats["seconds"]
    return episodes, {"tokens": tokens, "sampling_s": sampling_s}


def rollout_throughput(stats: dict, rollout_s: float) -> dict[str, float]:
    """The actor's sampled tokens per second over the whole rollout phase (as
    a run feels it: environments, prompts and retrieval included) and inside
    the sampler alone."""
    out = {"rollout/tokens": float(stats["tokens"])}
    if rollout_s > 0:
        out["rollout/tokens_per_s"] = stats["tokens"] / rollout_s
    if stats["sampling_s"] > 0:
        out["rollout/sampler_tokens_per_s"] = stats["tokens"] / stats["sampling_s"]
    return out


def retriever(run: Run, env_name: str, tasks, guided, record: bool = True,
              split: str = "train"):
    """What guided episodes of ``tasks`` read: the bank (through the
    experience manager) or, with experience.mode=oracle, their game's plan
    (``split``: whose games the task ids index: train, eval or unseen)."""
    if run.oracle is not None:
        return oracle_retriever(run.oracle[split], env_name, tasks, guided)
    if run.cfg.controls.lesson_room == "other":  # a control: another household's lessons
        foreign = ForeignRooms(household_split(run.cfg))
        return lambda q, k: retrieve(run, [foreign.query(x) for x in q], k, record)
    return lambda q, k: retrieve(run, q, k, record)


def actor_samples(episodes: Sequence[Episode], cfg) -> list:
    """The actor's training sequences (train.sample_unit): one per turn, or
    one per episode with each answer's turn advantage on its tokens."""
    if cfg.train.sample_unit == "episode":
        spec = dataclasses.replace(cfg.advantages, turn_weighting="turn")
        whole = [ep.trajectory_sample(a) for ep, a in zip(episodes, turn_advantages(episodes, spec))]
        return [s for s in whole if s is not None]
    return [s for ep, a in zip(episodes, turn_advantages(episodes, cfg.advantages))
            for s in ep.samples(a)]


def actor_updates(run: Run, state: RunState, samples) -> dict:
    """actor_epochs passes of actor_mini_batches optimiser steps over the
    batch; metrics are averaged over the steps (updates: how many ran)."""
    t = run.cfg.train
    if not samples:  # e.g. every conversation outgrew the prompt before its first answer
        return {"updates": 0}
    sums, n = {}, 0
    for _ in range(t.actor_epochs):
        order = (state.rng.permutation(len(samples)) if t.actor_mini_batches > 1
                 else np.arange(len(samples)))
        for chunk in np.array_split(order, min(t.actor_mini_batches, len(samples))):
            packed = pack_samples([samples[i] for i in chunk], run.tokenizer.pad_id,
                                  run.cfg.actor_optim.micro_batch)
            for k, v in run.actor.policy_step(packed).items():
                sums[k] = sums.get(k, 0.0) + v
            n += 1
    out = {k: v / n for k, v in sums.items()}
    out["updates"] = n
    return out


def _self_distillation(run: Run, episodes: Sequence[Episode]) -> dict:
    """Fig. 9b: an SFT step on good guided turns (experience.self_distillation > 0)."""
    weight = run.cfg.experience.self_distillation
    sd = (self_distillation_samples(episodes, run.engine.prompt_ids)
          if weight > 0 and run.use_experience else [])
    if not sd:
        return {}
    packed = pack_samples(sd, run.tokenizer.pad_id, run.cfg.actor_optim.micro_batch)
    return {"actor/self_distill_loss": run.actor.sft_step(packed, weight)["loss"],
            "actor/self_distill_samples": len(sd)}


def feed_manager(run: Run, step: int, episodes: Sequence[Episode]) -> None:
    """Finished episodes go to the extractor for consolidation; every
    merge_every steps the bank is merged, per task key."""
    if run.cfg.experience.static_bank:  # static bank, but guided outcomes still credit r(m)
        return
    x = run.cfg.experience
    baselines = (free_outcome_baselines(episodes)
                 if run.cfg.controls.reward_baseline == "free" else [0.0] * len(episodes))
    scores = CriticScores(x.critic_accept, x.critic_refine, x.critic_reject)
    for ep, baseline in zip(episodes, baselines):
        if x.consolidate == "guided" and not ep.guided:
            for key in ep.ask_keys:  # its tool calls still earn their outcome
                run.manager.training_buffer.credit(key, ep.won, baseline)
            continue
        judged = ep.judgement is not None
        credit = (critic_credit(outcome(ep.won, baseline), ep.judgement.verdict, scores)
                  if judged else None)
        for record in episode_records(run, ep, step, baseline, judged, credit):
            run.manager.submit_episode(record)
    every = run.cfg.experience.merge_every
    if every and (step + 1) % every == 0:
        # Entries carry their environment's task key in a shared bank too, so
        # merge per key either way (merging key "" found no entries and never ran).
        for key in sorted({ep.task_key for ep in episodes}):
            run.manager.merge(key, step)


def episode_records(run: Run, ep: Episode, step: int, baseline: float, judged: bool,
                    credit: float | None) -> list[EpisodeRecord]:
    """A finished episode's consolidation requests: one, or with
    experience.sightings_of=each one per object type its looks showed (at
    most experience.bank.max_ops_per_call, the goal's first), each naming
    that type's sightings and asking about it. Only the goal's carries the
    guiding entry, the tool calls and the verdict, so each is credited once."""
    x = run.cfg.experience
    room = room_line(ep.first_observation) if run.cfg.env.households else ""

    def record(goal: str, focus: str, first: bool = True) -> EpisodeRecord:
        trajectory = ep.trajectory_text(x.trajectory_obs_chars, x.trajectory_answers, focus,
                                        x.sighting_places)
        return EpisodeRecord(goal, trajectory, ep.won, ep.task_key,
                             ep.experience_id if first else None, step,
                             tuple(ep.ask_keys) if first else (), baseline, judged and first,
                             credit if first else None, room)

    if not x.trajectory_sightings:
        return [record(ep.goal, "")]
    if x.sightings_of == "every":
        return [record(ep.goal, EVERY_OBJECT)]
    goal_type = goal_object(ep.goal)
    if x.sightings_of == "goal":
        return [record(ep.goal, goal_type)]
    types = types_seen(ep.goal, ep.trajectory_text(x.trajectory_obs_chars, x.trajectory_answers,
                                                   EVERY_OBJECT))
    if not types:  # nothing was looked into: asked about its goal, as with "goal"
        return [record(ep.goal, goal_type)]
    return [record(ep.goal if t == goal_type else goal_about(ep.goal, t), t, i == 0)
            for i, t in enumerate(types[:x.bank.max_ops_per_call])]


def train_step(run: Run, state: RunState) -> tuple[RunState, dict]:
    """One RL step; returns the state after it and the step's metrics."""
    cfg = run.cfg
    if run.manager is not None:
        run.manager.set_actor_step(state.step)
    with run.timings.time("rollout") as rollout_timer:
        episodes, sampled = play_training_batch(run, state)
    metrics = batch_metrics(episodes, prefix="train/")
    metrics.update(rollout_throughput(sampled, rollout_timer.elapsed))
    if run.entry_tracker is not None:
        metrics.update(run.entry_tracker.guided_metrics(episodes))
        run.entry_tracker.remember(episodes)
    with run.timings.time("actor_update"):
        if cfg.experience.trains_actor:  # exp_only freezes the actor
            if state.step < cfg.train.actor_train_after:  # held while the bank fills
                metrics["actor/updates"] = 0
            else:
                samples = actor_samples(episodes, cfg)
                metrics.update({f"actor/{k}": v
                                for k, v in actor_updates(run, state, samples).items()})
                metrics.update(_self_distillation(run, episodes))
                run.sampler.update_params(run.actor.model)
    if run.manager is not None:
        feed_manager(run, state.step, episodes)
        if cfg.experience.sync:  # a fixed point: this step's consolidations and merge are in
            with run.timings.time("consolidation"):
                run.manager.drain()
    return dataclasses.replace(state, step=state.step + 1), metrics
