"""The warm start of the tiny models: supervised steps on expert demonstrations
before RL (checkpoint-loaded models skip it), shared through the warm-start
cache (crl_jax/training/warm_cache.py) so every arm of a comparison starts
from the same weights.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil

import jax
import numpy as np

from crl_jax.rl.learner import Learner
from crl_jax.training import setup, warmstart
from crl_jax.training.actor_episodes import actor_episode_demos
from crl_jax.training.config import RunConfig
from crl_jax.training.guided_demos import guided_demos
from crl_jax.training.logs import progress_bar
from crl_jax.training.lesson_demos import LessonBook, lesson_sft_samples
from crl_jax.training.run_dir import WARM_PROGRESS
from crl_jax.training.tasks import DEMO_TURNS_FACTOR, episode_cap, household_split
from crl_jax.training.wandering import wandering_demos
from crl_jax.training.warm_actors import actor_inputs_key, mark_actor
from crl_jax.training.warm_cache import WarmStartCache, actor_key, adopt_actor, load_params
from models.distributed import host_value, sync_processes

log = logging.getLogger(__name__)


def progress_dir(out_dir: str, cache: WarmStartCache | None, label: str = "") -> str:
    """Where an unfinished warm start keeps its progress: beside the cache
    entry it will become (any run with the same key continues it; the sweep
    lets one run at a time train a key), else in the run directory (kept
    until the run's first checkpoint holds the weights)."""
    if cache:
        base = os.path.join(cache.root, "in_progress", cache.key)
    else:
        base = os.path.join(out_dir, WARM_PROGRESS)
    return os.path.join(base, label) if label else base


def _publish(cache: WarmStartCache | None, out_dir: str, name: str, learner: Learner,
             losses: list, twin: str = "") -> None:
    """Stores one warm-started model in the cache as soon as it is trained:
    an arm that needs only the actor (the baseline) starts while this run
    still trains the extractor. ``twin`` (an actor's ``actor_key``) gets the
    actor too: the entry arms that teach the extractor otherwise adopt from
    (adopt_actor), which a preset whose extractor-only settings are not
    neutral would otherwise never fill, every such arm training the same
    actor again."""
    if cache:
        params = host_value(learner.params)  # every process: a gather when sharded over several
        if jax.process_index() == 0:
            cache.store(os.path.join(out_dir, "tokenizer"), {name: params}, {name: losses})
            shutil.rmtree(progress_dir(out_dir, cache, name), ignore_errors=True)
            if twin:
                adopt_actor(WarmStartCache(cache.root, twin), cache.key)
        sync_processes(f"warm start {name} stored")


def actor_demos(cfg: RunConfig, demos, sources, rng: np.random.Generator) -> list:
    """The actor's demonstrations: free ones and guided ones (guided_demos.py),
    per environment of the run."""
    out = []
    max_turns = episode_cap(cfg) * DEMO_TURNS_FACTOR
    split = household_split(cfg)
    book = LessonBook(split) if split is not None else None
    for src in sources:
        mine = [d for d in demos if d.env_name == src.env_name]
        bar = progress_bar(len([d for d in mine if d.won]), f"guided demos ({src.env_name})",
                           "game")
        out += guided_demos(mine, src.make, cfg.warm_start.guided_source,
                            cfg.warm_start.guided_fraction, max_turns, rng, bar.update,
                            contrast=cfg.warm_start.guided_contrast, book=book)
        bar.close()
    return out


def _train_actor(cfg: RunConfig, demos, sources, actor: Learner, tok, out_dir: str,
                 cache: WarmStartCache | None) -> list:
    # Part of the actor's demonstrations carry an experience line in every
    # mode, so all arms of a comparison can share one warm start (the
    # no-experience baseline simply never sees an "exp:" line later).
    ws, r = cfg.warm_start, cfg.rollout
    rng = np.random.default_rng(ws.seed + 7)
    samples = warmstart.actor_sft_samples(
        actor_demos(cfg, demos, sources, rng), tok, r.history, rng, list_actions=r.list_actions,
        recovery_fraction=ws.recovery_fraction, obs_chars=r.obs_chars,
        show_first_observation=r.show_first_observation, decision_repeat=ws.decision_repeat,
        line_repeat=ws.line_repeat, ask_fraction=ws.ask_fraction, judge_fraction=ws.judge_fraction)
    return setup.supervised_warm_start(actor, samples, ws.actor_lr, ws.actor_steps, ws.batch,
                                       tok.pad_id, rng, "actor",
                                       progress_dir(out_dir, cache, "actor"),
                                       lr_end=ws.actor_lr_end)


def _train_extractor(cfg: RunConfig, demos, sources, extractor: Learner, ext_tok, out_dir: str,
                     cache: WarmStartCache | None, actor: Learner | None = None,
                     tok=None, demos_at=None) -> list:
    # Its own generator: the same extractor whether or not the actor's warm
    # start ran in this process or came from the cache.
    ws = cfg.warm_start
    rng = np.random.default_rng(ws.seed + 8)
    if cfg.env.households:  # lessons, not plans (lesson_demos.py)
        if ws.extractor_home_rate not in (-1.0, cfg.env.home_rate):
            # demos_at (components.demos_at_home_rate) makes games as the run does
            demos, sources = demos_at(cfg, ws.extractor_home_rate)
        extra = []
        if ws.extractor_wanders:  # and episodes played as the actor plays (wandering.py)
            wander_rng = np.random.default_rng(ws.seed + 9)
            extra += wandering_demos(sources, demos, ws.extractor_wanders, episode_cap(cfg),
                                     wander_rng)
        if ws.extractor_actor_episodes:  # and the actor's own (actor_episodes.py)
            extra += actor_episode_demos(cfg, actor, tok, sources, demos,
                                         ws.extractor_actor_episodes, episode_cap(cfg),
                                         np.random.default_rng(ws.seed + 10))
        demos = [*demos, *extra]
        samples = lesson_sft_samples(demos, ext_tok, rng, room_jitter=ws.extractor_room_jitter,
                                     write_room=ws.extractor_writes_room,
                                     wrong_picks=ws.extractor_wrong_picks,
                                     missteps=ws.extractor_missteps,
                                     read_shown=ws.extractor_reads_shown,
                                     evidence=ws.extractor_writes_evidence,
                                     sightings=ws.extractor_sightings,
                                     other_types=ws.extractor_other_types,
                                     places=cfg.experience.sighting_places)
    else:
        samples = warmstart.extractor_sft_samples(demos, ext_tok, rng,
                                                  ask_fraction=ws.ask_fraction,
                                                  misstep_fraction=ws.extractor_missteps)
    return setup.supervised_warm_start(extractor, samples, ws.extractor_lr, ws.extractor_steps,
                                       ws.batch, ext_tok.pad_id, rng, "extractor",
                                       progress_dir(out_dir, cache, "extractor"))


def warm_start_models(cfg: RunConfig, demos, sources, actor: Learner, extractor: Learner | None,
                      tok, ext_tok, out_dir: str, cache: WarmStartCache | None,
                      resuming: bool = False, demos_at=None) -> dict[str, list]:
    """Warm-starts the actor (and the extractor, when the run has one) in
    place; returns their SFT loss curves. ``demos_at(cfg, home_rate)``: the
    expert's demonstrations and their sources at another home rate
    (warm_start.extractor_home_rate). Nothing to do for checkpoint
    models, without demonstrations, or when a resumed run's checkpoint
    already holds the trained weights."""
    ckpt_dir = os.path.join(out_dir, "checkpoints")
    if resuming and os.path.isdir(ckpt_dir) and os.listdir(ckpt_dir):
        return {}
    if cfg.actor.checkpoint or not demos:
        return {}
    losses: dict[str, list] = {}
    if cache and cache.has("actor"):
        actor.params = load_params(actor.params, cache.weights("actor"))
    else:
        losses["actor"] = _train_actor(cfg, demos, sources, actor, tok, out_dir, cache)
        _publish(cache, out_dir, "actor", actor, losses["actor"], twin=actor_key(cfg))
    if cache and jax.process_index() == 0:  # later entries of this actor find it (warm_actors.py)
        mark_actor(cache, actor_inputs_key(cfg))
    if extractor is not None and not cfg.extractor.checkpoint:
        if cache and cache.has("extractor"):
            extractor.params = load_params(extractor.params, cache.weights("extractor"))
        else:
            losses["extractor"] = _train_extractor(cfg, demos, sources, extractor, ext_tok,
                                                   out_dir, cache, actor, tok, demos_at)
            _publish(cache, out_dir, "extractor", extractor, losses["extractor"])
    if cache:
        # Each model's progress went when it reached the cache (_publish); the
        # key's directory goes once empty: another run may still be training
        # the extractor of this key (an actor-only arm must not take its progress).
        if jax.process_index() == 0:
            with contextlib.suppress(OSError):
                os.rmdir(progress_dir(out_dir, cache))
        losses = {**cache.losses(), **losses}
    for name, curve in losses.items():
        if curve:
            log.info("warm start %s: SFT loss %.3f at the first step, %.3f at the last (%d steps)",
                     name, curve[0], curve[-1], len(curve))
    return losses
