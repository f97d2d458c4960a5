"""The asynchronous dual loop of Complementary RL.

Primary loop (this thread): rollouts -> advantages -> actor update.
Background track: the experience manager's threads consolidate finished
episodes with the extractor and publish bank snapshots; a trainer thread
trains the extractor by CISPO whenever the manager's buffer has a batch.
A failure on either track stops the run with the error shown.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
from typing import Sequence

import numpy as np

from crl_jax import prompts, setup, warmstart
from crl_jax.checkpointing import RunCheckpointer
from crl_jax.warm_cache import WarmStartCache, load_leaves, record_warm_start, warm_start_key
from crl_jax.episode_stats import batch_metrics, self_distillation_samples, turn_advantages
from crl_jax.experience import EpisodeRecord
from crl_jax.extractor import ExtractorAgent
from crl_jax.learner import Learner, pack_samples
from crl_jax.metrics import MetricsWriter, PhaseTimings, ProgressBar
from crl_jax.rollout import Episode, RolloutEngine
from crl_jax.run_config import RunConfig
from crl_jax.tasks import task_source
from models.sampler import Sampler

log = logging.getLogger(__name__)


class BackgroundFailure(RuntimeError):
    """The background track failed; the run stops."""


class Trainer:
    def __init__(self, cfg: RunConfig, out_dir: str | None = None, resume: bool = False):
        self.cfg = cfg
        self.resuming = resume
        self.out_dir = out_dir or cfg.train.out_dir
        os.makedirs(self.out_dir, exist_ok=True)
        self.rng = np.random.default_rng(cfg.train.seed)
        self.timings = PhaseTimings()
        self.step = 0
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._ext_metrics: list[dict] = []
        self._ext_thread: threading.Thread | None = None
        self._eval_envs: dict[str, list] = {}  # built at the first evaluation, then reused
        self.manager = None
        self._build()

    # ----- set-up --------------------------------------------------------------------------
    def _build(self) -> None:
        cfg, t = self.cfg, self.cfg.train
        max_steps = cfg.env.max_episode_steps or cfg.rollout.max_turns
        data_seed = cfg.warm_start.seed
        self.train_sources = [task_source(n, cfg.env.train_split, cfg.env.num_generated, data_seed,
                                          max_steps, cfg.env.lenient_actions, None,
                                          cfg.env.task_types, cfg.env.room_size, cfg.env.seeded_clock)
                              for n in cfg.env.names]
        self.eval_sources = [task_source(n, cfg.env.eval_split, cfg.env.num_generated, data_seed,
                                         max_steps, cfg.env.lenient_actions, cfg.env.num_eval_tasks,
                                         cfg.env.task_types, cfg.env.room_size, cfg.env.seeded_clock)
                             for n in cfg.env.names]
        tiny = not cfg.actor.checkpoint
        demos = []
        if tiny or cfg.warm_start.demos:
            with self.timings.time("demos"):
                demo_rng = np.random.default_rng(cfg.warm_start.seed)
                per_env = max(1, cfg.warm_start.demos // len(self.train_sources))
                for src in self.train_sources:
                    picks = demo_rng.choice(len(src.tasks), size=min(per_env, len(src.tasks)),
                                            replace=False)
                    demos += warmstart.collect_demos(src.env_name, src.make,
                                                     [src.tasks[i] for i in picks], max_steps,
                                                     src.expert)
        self.demos = demos
        self.rl_sources = [self._task_pool(src) for src in self.train_sources]
        self.warm_cache = (WarmStartCache(cfg.warm_start.cache_dir, warm_start_key(cfg))
                           if cfg.warm_start.cache_dir and tiny else None)
        if self.warm_cache:  # which warm start this run grew from (figures check it)
            record_warm_start(self.out_dir, self.warm_cache.key)
        cached_tok = self.warm_cache.tokenizer_dir() if self.warm_cache else None
        if cached_tok and not os.path.exists(os.path.join(self.out_dir, "tokenizer")):
            shutil.copytree(cached_tok, os.path.join(self.out_dir, "tokenizer"))
        tok = setup.load_tokenizer_for(cfg.actor)
        self.tokenizer = tok or setup.env_tokenizer(cfg, demos, self.out_dir)
        ext_tok = setup.load_tokenizer_for(cfg.extractor) or self.tokenizer
        self.ext_tokenizer = ext_tok
        actor_model = setup.build_model(cfg.actor, self.tokenizer, data_seed,
                                        setup.role_mesh(cfg.actor))
        self.actor = Learner(actor_model, cfg.actor_optim, cfg.actor_loss,
                             mesh=setup.role_mesh(cfg.actor))
        self.use_experience = cfg.experience.mode != "none"
        if self.use_experience:
            ext_model = setup.build_model(cfg.extractor, ext_tok, data_seed + 1,
                                          setup.role_mesh(cfg.extractor))
            # Not donated: the consolidation thread samples from the extractor's
            # parameters while its training thread updates them.
            self.extractor = Learner(ext_model, cfg.extractor_optim, cfg.extractor_loss,
                                     mesh=setup.role_mesh(cfg.extractor), donate=False)
        self._warm_start(demos)
        self.sampler = Sampler(self.actor.model, pad_id=self.tokenizer.pad_id)
        self.engine = RolloutEngine(self.sampler, self.tokenizer, cfg.rollout)
        n = t.tasks_per_step * t.group_size
        self.train_envs = {s.env_name: [s.make() for _ in range(n)] for s in self.train_sources}
        if self.use_experience:
            frozen = cfg.experience.mode in ("offline", "static_online")
            self.agent = ExtractorAgent(self.extractor, ext_tok, cfg.rollout.format,
                                        cfg.experience.extractor_max_new_tokens,
                                        cfg.rollout.temperature, t.seed, frozen=frozen)
            merger = self.agent.merge if cfg.experience.merger == "extractor" else setup.dedup_merger
            self.manager = setup.make_manager(cfg, self.agent, merger)
            if cfg.experience.mode == "offline":
                self._build_offline_bank(demos)

    def _task_pool(self, src):
        """``src`` restricted to train.task_pool tasks, drawn once from
        warm_start.seed (the same subset for every RL seed and on resume)."""
        n = self.cfg.train.task_pool
        if not n or n >= len(src.tasks):
            return src
        picks = np.random.default_rng(self.cfg.warm_start.seed + 11).choice(len(src.tasks), n,
                                                                       replace=False)
        return dataclasses.replace(src, tasks=[src.tasks[i] for i in sorted(picks)])

    def _warm_start(self, demos) -> None:
        cfg, ws = self.cfg, self.cfg.warm_start
        self.warm_start_losses = {}
        ckpt_dir = os.path.join(self.out_dir, "checkpoints")
        if self.resuming and os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir):
            return  # the checkpoint holds the trained weights
        if cfg.actor.checkpoint or not demos:
            return
        # Half of the actor's demonstrations carry an experience entry in every
        # mode, so all arms of a comparison can share one warm start (the
        # no-experience baseline simply never sees an "exp:" line later).
        rng = np.random.default_rng(ws.seed + 7)
        cache = self.warm_cache
        with self.timings.time("warm_start"):
            if cache and cache.has("actor"):
                self.actor.params = load_leaves(self.actor.params, os.path.join(cache.path, "actor.npz"))
            else:
                r = cfg.rollout
                samples = warmstart.actor_sft_samples(
                    demos, self.tokenizer, r.history, rng, guided_fraction=0.5,
                    list_actions=r.list_actions, recovery_fraction=ws.recovery_fraction,
                    obs_chars=r.obs_chars, show_first_observation=r.show_first_observation,
                    decision_repeat=ws.decision_repeat, ask_fraction=ws.ask_fraction)
                self.warm_start_losses["actor"] = setup.supervised_warm_start(
                    self.actor, samples, ws.actor_lr, ws.actor_steps, ws.batch,
                    self.tokenizer.pad_id, rng, "actor", self._warm_progress("actor"))
                self._publish_warm_start("actor", self.actor)
            if self.use_experience and not cfg.extractor.checkpoint:
                if cache and cache.has("extractor"):
                    self.extractor.params = load_leaves(self.extractor.params,
                                                        os.path.join(cache.path, "extractor.npz"))
                else:
                    # Its own generator: the same extractor whether or not the
                    # actor's warm start ran in this process or came from the cache.
                    ext_rng = np.random.default_rng(ws.seed + 8)
                    samples = warmstart.extractor_sft_samples(demos, self.ext_tokenizer, ext_rng,
                                                              ask_fraction=ws.ask_fraction)
                    self.warm_start_losses["extractor"] = setup.supervised_warm_start(
                        self.extractor, samples, ws.extractor_lr, ws.extractor_steps, ws.batch,
                        self.ext_tokenizer.pad_id, ext_rng, "extractor",
                        self._warm_progress("extractor"))
                    self._publish_warm_start("extractor", self.extractor)
            if cache:
                shutil.rmtree(self._warm_progress(), ignore_errors=True)  # now in the cache
                self.warm_start_losses = {**cache.losses(), **self.warm_start_losses}
        log.info("warm start: %s", {k: (round(v[0], 3), round(v[-1], 3))
                                    for k, v in self.warm_start_losses.items() if v})

    def _publish_warm_start(self, name: str, learner) -> None:
        """Stores one warm-started model in the cache as soon as it is trained:
        an arm that needs only the actor (the baseline) starts while this run
        still trains the extractor."""
        if self.warm_cache:
            self.warm_cache.store(os.path.join(self.out_dir, "tokenizer"), {name: learner.params},
                                  {name: self.warm_start_losses[name]})
            shutil.rmtree(self._warm_progress(name), ignore_errors=True)

    def _warm_progress(self, label: str = "") -> str:
        """Where an unfinished warm start keeps its progress: beside the cache
        entry it will become (any run with the same key continues it; the
        sweep lets one run at a time train a key), else in the run directory
        (kept until the run's first checkpoint holds the weights)."""
        if self.warm_cache:
            base = os.path.join(self.warm_cache.root, "in_progress", self.warm_cache.key)
        else:
            base = os.path.join(self.out_dir, "warm_start_progress")
        return os.path.join(base, label) if label else base

    def _build_offline_bank(self, demos) -> None:
        """Offline Exp.: the fixed extractor distils the demonstrations once; the bank is then static."""
        futures = [self.manager.submit_episode(EpisodeRecord(
            d.goal, prompts.trajectory_text(d.actions, d.observations[1:]), d.won,
            d.env_name, None, 0)) for d in demos]
        for f in futures:
            f.result(timeout=600)

    # ----- one step ------------------------------------------------------------------------
    def _retrieve(self, queries: list[str], keys: list[str]):
        per_task = self.cfg.experience.bank.per_task
        futures = [self.manager.search(q, k if per_task else "") for q, k in zip(queries, keys)]
        out = []
        for f in futures:
            hits = f.result(timeout=self.cfg.experience.bank.thread_timeout_s)
            out.append((hits[0].entry.text, hits[0].entry.id) if hits else None)
        return out

    def _ask(self, queries: list[str], keys: list[str]):
        """The search-and-ask tool: the bank's best entry, rewritten by the extractor
        (with experience.ask_answers="nothing": no answer, the rollout says so)."""
        if self.cfg.experience.ask_answers == "nothing":
            return [(None, None)] * len(queries)
        per_task = self.cfg.experience.bank.per_task
        futures = [self.manager.search_and_ask(q, k if per_task else "", self.step)
                   for q, k in zip(queries, keys)]
        timeout = self.cfg.experience.bank.thread_timeout_s * 4
        return [(r.text, r.sample_key) for r in (f.result(timeout=timeout) for f in futures)]

    def play(self, sources, tasks_per_env: int, group: int, guided_fraction: float, envs=None,
             seed: int = 0) -> list[Episode]:
        episodes = []
        for src in sources:
            picks = self.rng.choice(len(src.tasks), size=min(tasks_per_env, len(src.tasks)),
                                    replace=False)
            tasks = [src.tasks[i] for i in picks for _ in range(group)]
            n_guided = int(round(group * guided_fraction)) if self.use_experience else 0
            guided = [k < n_guided for _ in picks for k in range(group)]
            pool = envs[src.env_name] if envs else [src.make() for _ in tasks]
            ask = self._ask if (self.use_experience and self.cfg.experience.search_and_ask) else None
            episodes += self.engine.play(pool[:len(tasks)], tasks, guided,
                                         self._retrieve if any(guided) else None, seed=seed,
                                         ask=ask)
        return episodes

    def train_step(self) -> dict:
        cfg, t = self.cfg, self.cfg.train
        with self.timings.time("rollout"):
            episodes = self.play(self.rl_sources, t.tasks_per_step, t.group_size,
                                 cfg.experience.guided_fraction, self.train_envs,
                                 seed=t.seed * 100_003 + self.step)
        metrics = batch_metrics(episodes, prefix="train/")
        with self.timings.time("actor_update"):
            turn_adv = turn_advantages(episodes, cfg.advantages)
            if cfg.experience.mode != "exp_only":
                samples = [s for ep, a in zip(episodes, turn_adv) for s in ep.samples(a)]
                metrics.update({f"actor/{k}": v for k, v in self._actor_updates(samples).items()})
                weight = cfg.experience.self_distillation
                sd = (self_distillation_samples(episodes, self.engine.prompt_ids)
                      if weight > 0 and self.use_experience else [])
                if sd:
                    packed = pack_samples(sd, self.tokenizer.pad_id, cfg.actor_optim.micro_batch)
                    metrics["actor/self_distill_loss"] = self.actor.sft_step(packed, weight)["loss"]
                    metrics["actor/self_distill_samples"] = len(sd)
                self.sampler.update_params(self.actor.model)
        if self.use_experience:
            self._feed_manager(episodes)
        return metrics

    def _actor_updates(self, samples) -> dict:
        """actor_epochs passes of actor_mini_batches optimiser steps over the
        batch; metrics are averaged over the steps (updates: how many ran)."""
        t = self.cfg.train
        sums, n = {}, 0
        for _ in range(t.actor_epochs):
            order = (self.rng.permutation(len(samples)) if t.actor_mini_batches > 1
                     else np.arange(len(samples)))
            chunks = np.array_split(order, min(t.actor_mini_batches, len(samples)))
            for chunk in chunks:
                packed = pack_samples([samples[i] for i in chunk], self.tokenizer.pad_id,
                                      self.cfg.actor_optim.micro_batch)
                for k, v in self.actor.policy_step(packed).items():
                    sums[k] = sums.get(k, 0.0) + v
                n += 1
        out = {k: v / n for k, v in sums.items()}
        out["updates"] = n
        return out

    def _feed_manager(self, episodes: Sequence[Episode]) -> None:
        mode = self.cfg.experience.mode
        if mode == "offline":  # static bank, but guided outcomes still credit r(m)
            return
        for ep in episodes:
            self.manager.submit_episode(EpisodeRecord(ep.goal, ep.trajectory_text(), ep.won,
                                                      ep.task_key, ep.experience_id, self.step,
                                                      tuple(ep.ask_keys)))
        every = self.cfg.experience.merge_every
        if every and (self.step + 1) % every == 0:
            # Entries carry their environment's task key in a shared bank too, so
            # merge per key either way (merging key "" found no entries and never ran).
            for key in sorted({ep.task_key for ep in episodes}):
                self.manager.merge(key, self.step)

    # ----- background extractor training ---------------------------------------------------
    def _extractor_loop(self) -> None:
        spec = self.cfg.experience
        current, updates = -1, 0  # updates made during the current actor step
        try:
            while not self._stop.is_set():
                items = None
                step = self.step
                if step != current:
                    current, updates = step, 0
                if step >= spec.extractor_train_after and updates < spec.extractor_updates_per_step:
                    items = self.manager.draw_training_batch(step)
                    updates += bool(items)
                if items:
                    m = self.agent.train_step(items)
                    m["at_actor_step"] = self.step
                    self._ext_metrics.append(m)
                else:
                    self._stop.wait(0.05)
        except BaseException as err:  # surfaced by _check() in the primary loop
            self._failure = err

    def _check(self) -> None:
        if self._failure is not None:
            raise BackgroundFailure(f"extractor training failed: {self._failure!r}") from self._failure
        if self.manager is not None:
            self.manager.check()

    # ----- evaluation ----------------------------------------------------------------------
    def evaluate(self) -> dict:
        out = {}
        modes = [("with_exp", 1.0), ("no_exp", 0.0)] if self.use_experience else [("no_exp", 0.0)]
        for name, frac in modes:
            eps = []
            for src in self.eval_sources:
                tasks = src.tasks[: self.cfg.env.num_eval_tasks]
                pool = self._eval_envs.setdefault(src.env_name, [src.make() for _ in tasks])
                use = self.use_experience and frac > 0
                got = self.engine.play(pool, tasks, [use] * len(tasks),
                                       self._retrieve if use else None, seed=12345)
                if len(self.eval_sources) > 1:  # mixtures: each environment's own numbers too
                    out.update(batch_metrics(got, prefix=f"eval_{name}/{src.env_name}/"))
                eps += got
            out.update(batch_metrics(eps, prefix=f"eval_{name}/"))
        return out

    # ----- checkpoints -----------------------------------------------------------------------
    def _trees(self) -> dict:
        trees = {"actor_params": self.actor.params, "actor_opt": self.actor.opt_state}
        if self.use_experience:
            trees.update(extractor_params=self.extractor.params, extractor_opt=self.extractor.opt_state)
        return trees

    def save_checkpoint(self, ckpt: RunCheckpointer, step: int) -> None:
        host = {"step": step, "rng": self.rng.bit_generator.state}
        files = {}
        if self.manager is not None:
            self.manager.bank.flush()
            files["bank"] = self.manager.bank.save
            host["extractor_buffer"] = self.manager.training_buffer.state_dict()
        ckpt.save(step, self._trees(), host, files)

    def restore_checkpoint(self, ckpt: RunCheckpointer) -> int:
        """Loads the latest checkpoint; returns the number of steps already done."""
        if ckpt.latest_step() is None:
            return 0
        restored = ckpt.restore(targets=self._trees())
        trees = restored.trees
        self.actor.params, self.actor.opt_state = trees["actor_params"], trees["actor_opt"]
        self.sampler.update_params(self.actor.model)
        if self.use_experience:
            self.extractor.params = trees["extractor_params"]
            self.extractor.opt_state = trees["extractor_opt"]
            self.agent.sampler.update_params(self.extractor.model)
            self.manager.bank.restore(restored.files["bank"])
            self.manager.training_buffer.load_state_dict(restored.host_state["extractor_buffer"])
        self.rng.bit_generator.state = restored.host_state["rng"]
        log.info("resumed from step %d", restored.step)
        return int(restored.host_state["step"])

    # ----- the run -------------------------------------------------------------------------
    def run(self, resume: bool = False) -> list[dict]:
        cfg, t = self.cfg, self.cfg.train
        history = []
        ckpt = RunCheckpointer(os.path.join(self.out_dir, "checkpoints"), keep=3)
        start = self.restore_checkpoint(ckpt) if resume else 0
        if not resume and ckpt.latest_step() is not None:
            raise FileExistsError(f"{self.out_dir} already holds checkpoints: pass --resume to "
                                  f"continue that run, or choose another out_dir")
        writer = MetricsWriter(self.out_dir)
        writer.truncate_after(start)
        bar = ProgressBar(t.steps, initial=start,
                          keys=("train/success", "train/actions", "eval_no_exp/success"))
        train_extractor = cfg.experience.mode in ("comp_rl", "exp_only")
        if self.use_experience and train_extractor:
            self._ext_thread = threading.Thread(target=self._extractor_loop, daemon=True,
                                                name="crl-extractor-train")
            self._ext_thread.start()
        try:
            first = self.evaluate() if t.eval_every and start == 0 else {}
            if first:
                writer.write(0, first)
            for self.step in range(start, t.steps):
                self._check()
                metrics = self.train_step()
                if t.eval_every and ((self.step + 1) % t.eval_every == 0 or self.step + 1 == t.steps):
                    with self.timings.time("eval"):
                        metrics.update(self.evaluate())
                metrics.update(self._background_metrics())
                metrics.update(self.timings.pop_all())
                writer.write(self.step + 1, metrics)
                history.append(metrics)
                bar.update(self.step + 1, metrics)
                every = t.checkpoint_every
                if every and ((self.step + 1) % every == 0 or self.step + 1 == t.steps):
                    with self.timings.time("checkpoint"):
                        self.save_checkpoint(ckpt, self.step + 1)
                    if os.path.isdir(self._warm_progress()):  # the checkpoint holds the weights
                        ckpt.wait()
                        shutil.rmtree(self._warm_progress(), ignore_errors=True)
            self._check()
        finally:
            ckpt.close()
            self._stop.set()
            if self._ext_thread is not None:
                self._ext_thread.join(timeout=60)
            if self.manager is not None:
                self.manager.close()
            bar.close()
            writer.close()
        return [first] + history if first else history

    def _background_metrics(self) -> dict:
        out = {}
        if self.manager is not None:
            snap = self.manager.bank.snapshot
            out["bank/size"] = len(snap)
            out.update({f"manager/{k}": v for k, v in self.manager.counters.items()})
            out["extractor/buffer_ready"] = self.manager.training_buffer.ready_count()
        if self._ext_metrics:
            done, self._ext_metrics = self._ext_metrics, []
            out["extractor/updates"] = len(done)
            for k in ("loss", "reward_mean", "weight_mean", "grad_norm"):
                vals = [m[k] for m in done if k in m]
                if vals:
                    out[f"extractor/{k}"] = float(np.mean(vals))
        return out
