"""What a run is made of, built once: task sources, demonstrations, tokenizers,
the actor and extractor learners (warm-started), the rollout engine, the
training environments and the experience manager.

`build_run` returns them as one `Run`; the loop (crl_jax/training/loop.py)
threads a `RunState` through `train_step` over it.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil

import jax
import numpy as np

from crl_jax.envs.alfworld_lesson_merge import merge_lessons
from crl_jax.envs.base import TextEnv
from crl_jax.experience import EpisodeRecord, ExperienceManager
from crl_jax.rl import prompts
from crl_jax.rl.extractor import ExtractorAgent
from crl_jax.rl.learner import Learner
from crl_jax.rl.rollout import RolloutEngine
from crl_jax.training import setup, warmstart
from crl_jax.training.config import RunConfig
from crl_jax.training.entry_tracking import EntryTracker
from crl_jax.training.metrics import PhaseTimings
from crl_jax.training.oracle import oracle_entries, oracle_plans
from crl_jax.training.tasks import (DEMO_TURNS_FACTOR, TaskSource, episode_cap, household_split,
                                   task_source)
from crl_jax.training.warm_actors import actor_inputs_key, entry_with_actor
from crl_jax.training.warm_cache import (WarmStartCache, actor_key, adopt_actor, record_warm_start,
                                         recorded_warm_start, warm_start_key)
from crl_jax.training.warm_stage import warm_start_models
from crl_jax.training.logs import progress_bar
from models.distributed import main_process_first
from models.sampler import Sampler
from models.tokenizer import Tokenizer

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Run:
    """The parts of a run that live for its whole length."""

    cfg: RunConfig
    out_dir: str
    train_sources: list[TaskSource]
    eval_sources: list[TaskSource]
    rl_sources: list[TaskSource]  # train_sources cut to train.task_pool
    demos: list[warmstart.Demo]
    tokenizer: Tokenizer
    ext_tokenizer: Tokenizer
    actor: Learner
    extractor: Learner | None
    sampler: Sampler
    engine: RolloutEngine
    train_envs: dict[str, list[TextEnv]]  # environment name -> one per episode of a step
    agent: ExtractorAgent | None
    manager: ExperienceManager | None
    warm_start_losses: dict[str, list]  # role -> SFT loss curve
    timings: PhaseTimings
    # is_oracle: {"train" | "eval" | "unseen": {(environment, task): entry}}
    oracle: dict[str, dict[tuple[str, object], str]] | None = None
    unseen_sources: list[TaskSource] = dataclasses.field(default_factory=list)  # env.unseen_households
    entry_tracker: EntryTracker | None = None  # runs with experience and a fixed task pool

    @property
    def use_experience(self) -> bool:
        return self.cfg.experience.retrieves

    def close(self) -> None:
        """Stops the experience manager's threads and closes the environments."""
        if self.manager is not None:
            self.manager.close()
        for envs in self.train_envs.values():
            for env in envs:
                env.close()


def task_sources(cfg: RunConfig, split: str, limit: int | None,
                 max_steps: int | None = None) -> list[TaskSource]:
    max_steps = max_steps or episode_cap(cfg)
    e = cfg.env
    return [task_source(name, split, e.num_generated, cfg.warm_start.seed, max_steps,
                        e.lenient_actions, limit, e.task_types, e.room_size, e.seeded_clock,
                        household_split(cfg))
            for name in e.names]


def task_pool(cfg: RunConfig, src: TaskSource) -> TaskSource:
    """``src`` restricted to train.task_pool tasks, drawn once from
    warm_start.seed (the same subset for every RL seed and on resume); with
    env.households, to the games of the pool's households."""
    split = household_split(cfg)
    if split is not None:
        return dataclasses.replace(src, tasks=[t for t in src.tasks if split.in_pool(t)])
    n = cfg.train.task_pool
    if not n or n >= len(src.tasks):
        return src
    picks = np.random.default_rng(cfg.warm_start.seed + 11).choice(len(src.tasks), n, replace=False)
    return dataclasses.replace(src, tasks=[src.tasks[i] for i in sorted(picks)])


def collect_demos(cfg: RunConfig, sources: list[TaskSource]) -> list[warmstart.Demo]:
    """Expert episodes on warm_start.demos training tasks, shared out among
    the environments (tiny models only: checkpoints need none); with
    train.pool_disjoint, none of them in the RL pool."""
    if cfg.actor.checkpoint and not cfg.warm_start.demos:
        return []
    rng = np.random.default_rng(cfg.warm_start.seed)
    max_steps = episode_cap(cfg) * DEMO_TURNS_FACTOR
    per_env = max(1, cfg.warm_start.demos // len(sources))
    demos = []
    for src in sources:
        if cfg.train.pool_disjoint or cfg.env.households:  # households: the pool's are the RL's
            pool = set(task_pool(cfg, src).tasks)
            src = dataclasses.replace(src, tasks=[t for t in src.tasks if t not in pool])
            if not src.tasks:
                raise ValueError(f"train.pool_disjoint: the RL pool takes all {len(pool)} training "
                                 f"tasks of {src.env_name}, none is left to demonstrate; make "
                                 "train.task_pool smaller or the training split larger")
        picks = rng.choice(len(src.tasks), size=min(per_env, len(src.tasks)), replace=False)
        tasks = [src.tasks[i] for i in picks]
        bar = progress_bar(len(tasks), f"expert demos ({src.env_name})", "game")
        demos += warmstart.collect_demos(src.env_name, src.make, tasks, max_steps, src.expert,
                                         on_episode=lambda: bar.update(1))
        bar.close()
    log.info("collected %d expert demonstrations", len(demos))
    return demos


def _tokenizers(cfg: RunConfig, demos: list, out_dir: str, cache: WarmStartCache | None):
    """The actor's and extractor's tokenizers. A tiny model's is fitted (or
    copied from the cache) into the run directory by process 0 first; the
    other processes then load that one."""
    def make():
        cached = cache.tokenizer_dir() if cache else None
        if cached and not os.path.exists(os.path.join(out_dir, "tokenizer")):
            shutil.copytree(cached, os.path.join(out_dir, "tokenizer"))
        return setup.load_tokenizer_for(cfg.actor) or setup.env_tokenizer(cfg, demos, out_dir)

    tok = main_process_first(make, "tokenizer")
    return tok, setup.load_tokenizer_for(cfg.extractor) or tok


def _learners(cfg: RunConfig, tok, ext_tok) -> tuple[Learner, Learner | None]:
    seed = cfg.warm_start.seed
    mesh = setup.role_mesh(cfg.actor)
    actor = Learner(setup.build_model(cfg.actor, tok, seed, mesh), cfg.actor_optim,
                    cfg.actor_loss, mesh=mesh)
    if not cfg.experience.has_extractor:  # none, oracle: no extractor to train or sample
        return actor, None
    ext_mesh = setup.role_mesh(cfg.extractor)
    # Not donated: the consolidation thread samples from the extractor's
    # parameters while its training thread updates them.
    extractor = Learner(setup.build_model(cfg.extractor, ext_tok, seed + 1, ext_mesh),
                        cfg.extractor_optim, cfg.extractor_loss, mesh=ext_mesh, donate=False)
    return actor, extractor


def experience_merger(x, extractor_merge):
    """Who decides a merge (experience.merger), given the extractor's own;
    a lesson merger says which inputs each lesson states where the merged
    lessons credit them (experience.bank.merge_credit=sources)."""
    lessons = functools.partial(merge_lessons, keep=x.lesson_homes,
                                sources=x.bank.merge_credit == "sources")
    return {"extractor": extractor_merge, "dedup": setup.dedup_merger,
            "lessons": lessons,
            "lesson_votes": functools.partial(lessons, carry_votes=True),
            "lesson_evidence": functools.partial(lessons, evidence=True)}[x.merger]


def _experience(cfg: RunConfig, extractor: Learner, ext_tok):
    frozen = cfg.experience.extractor_frozen
    x = cfg.experience
    temperature = cfg.rollout.temperature if x.extractor_temperature is None else x.extractor_temperature
    agent = ExtractorAgent(extractor, ext_tok, cfg.rollout.format, x.extractor_max_new_tokens,
                           temperature, cfg.train.seed, frozen=frozen, top_p=x.extractor_top_p,
                           max_prompt_tokens=x.extractor_max_prompt_tokens)
    merger = experience_merger(x, agent.merge)
    reader = agent
    if cfg.controls.lesson_reader == "rule":  # a control: lessons read by rule
        from crl_jax.training.lesson_controls import RuleLessonReader
        reader = RuleLessonReader(agent, evidence=x.merger == "lesson_evidence",
                                  sightings=x.trajectory_sightings,
                                  every_type=x.sightings_of == "every",
                                  max_lessons=x.bank.max_ops_per_call)
    return agent, setup.make_manager(cfg, reader, merger)


def build_offline_bank(manager, demos: list) -> None:
    """Offline Exp.: the fixed extractor distils the demonstrations once; the bank is then static."""
    futures = [manager.submit_episode(EpisodeRecord(
        d.goal, prompts.trajectory_text(d.actions, d.observations[1:]), d.won,
        d.env_name, None, 0)) for d in demos]
    bar = progress_bar(len(futures), "offline bank", "demo")
    for f in futures:
        f.result(timeout=600)
        bar.update(1)
    bar.close()


def demos_at_home_rate(cfg: RunConfig, home_rate: float) -> tuple[list, list]:
    """The expert's demonstrations, and their task sources, on games of the
    run's households with objects at their homes at ``home_rate``
    (warm_start.extractor_home_rate): game i of the split is dealt to the
    same household at any rate, so the same rooms, objects placed afresh."""
    at = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, home_rate=home_rate))
    sources = task_sources(at, at.env.train_split, None, episode_cap(at) * DEMO_TURNS_FACTOR)
    return collect_demos(at, sources), sources


def _warm_start_cache(cfg: RunConfig, out_dir: str, resume: bool) -> WarmStartCache | None:
    """The run's warm-start cache entry (tiny models with warm_start.cache_dir),
    recorded in the run directory; it adopts the actor of its extractor-only
    twin when it has none."""
    if not cfg.warm_start.cache_dir or cfg.actor.checkpoint:
        return None
    cache, twin = WarmStartCache(cfg.warm_start.cache_dir, warm_start_key(cfg)), actor_key(cfg)
    if not (cache.has("actor") or WarmStartCache(cache.root, twin).has("actor")):
        # no twin either: any entry whose actor was trained from the same inputs
        twin = entry_with_actor(cache.root, actor_inputs_key(cfg), but=cache.key) or twin
    if adopt_actor(cache, twin):
        log.info("warm start %s: its actor is %s's (only the extractor differs)",
                 cache.key, twin)
    grew_from = recorded_warm_start(out_dir) if resume else None  # figures check it
    if grew_from is None and jax.process_index() == 0:  # process 0 writes the run's files
        record_warm_start(out_dir, cache.key)
    elif grew_from not in (None, cache.key):  # the record stays: the checkpoint holds that warm start
        log.warning("this run grew from warm start %s; this code builds %s: the resumed run "
                    "continues from its checkpoint, but a new run of these settings would "
                    "start elsewhere", grew_from, cache.key)
    return cache


def build_run(cfg: RunConfig, out_dir: str | None = None, resume: bool = False) -> Run:
    """Builds every part of a run; warm-starts the tiny models (or loads their
    warm start from the cache, or leaves it to the checkpoint on resume)."""
    out_dir = out_dir or cfg.train.out_dir
    os.makedirs(out_dir, exist_ok=True)
    timings = PhaseTimings()
    train_sources = task_sources(cfg, cfg.env.train_split, None)
    demo_sources = task_sources(cfg, cfg.env.train_split, None,
                                episode_cap(cfg) * DEMO_TURNS_FACTOR)
    with timings.time("demos"):
        demos = collect_demos(cfg, demo_sources)
    cache = _warm_start_cache(cfg, out_dir, resume)
    tok, ext_tok = _tokenizers(cfg, demos, out_dir, cache)
    actor, extractor = _learners(cfg, tok, ext_tok)
    with timings.time("warm_start"):
        losses = warm_start_models(cfg, demos, demo_sources, actor, extractor, tok, ext_tok,
                                   out_dir, cache, resuming=resume,
                                   demos_at=demos_at_home_rate)
    sampler = Sampler(actor.model, pad_id=tok.pad_id)
    n = cfg.train.tasks_per_step * cfg.train.group_size
    agent, manager = _experience(cfg, extractor, ext_tok) if extractor is not None else (None, None)
    if manager is not None and cfg.experience.static_bank:
        build_offline_bank(manager, demos)
    eval_sources = task_sources(cfg, cfg.env.eval_split, cfg.env.num_eval_tasks)
    unseen_sources = (task_sources(cfg, "generated_unseen", cfg.env.num_eval_tasks)
                      if cfg.env.unseen_households else [])
    rl_sources = [task_pool(cfg, s) for s in train_sources]
    oracle = (oracle_entries(cfg, {"train": rl_sources, "eval": eval_sources,
                                   "unseen": unseen_sources})
              if cfg.experience.is_oracle else None)
    train_envs = {s.env_name: [s.make() for _ in range(n)] for s in train_sources}
    tracker = None
    # The pool's true plans, keyed as episodes name their games; only for a
    # fixed pool (train.task_pool): without one, RL draws from every training
    # game and there is no "latest trajectory of each pool game" to score.
    if cfg.experience.retrieves and cfg.train.task_pool:
        names = {s.env_name: getattr(train_envs[s.env_name][0], "name", s.env_name)
                 for s in train_sources}
        plans = oracle_plans(rl_sources, 0, episode_cap(cfg), cfg.warm_start.seed)
        tracker = EntryTracker({(names[e], t): p for (e, t), p in plans.items()},
                               cfg.experience.trajectory_obs_chars)
    engine = RolloutEngine(sampler, tok, cfg.rollout, cfg.experience.bank.retrieval_key)
    return Run(cfg=cfg, out_dir=out_dir, engine=engine, train_sources=train_sources,
               eval_sources=eval_sources, unseen_sources=unseen_sources, rl_sources=rl_sources,
               demos=demos, oracle=oracle,
               tokenizer=tok, ext_tokenizer=ext_tok, actor=actor, extractor=extractor, agent=agent,
               sampler=sampler, train_envs=train_envs, manager=manager, warm_start_losses=losses,
               timings=timings, entry_tracker=tracker)
