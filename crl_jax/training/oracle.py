"""``experience.mode=oracle``: a control for the actor, not a method.

Retrieval returns the expert's plan of the episode's own game (training pool
and evaluation games alike), made wrong in ``controls.oracle_noise`` steps,
or (``controls.oracle_source=lesson``, households) the household's true
lesson for the goal's object type (``lessonfirst``: its first home alone);
there is no extractor and no bank. It measures the best that experience of
this form could do for the actor, and how good an entry must be to pay:
against it, Comp. RL's bank can only be as useful as its entries are close
to these.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from crl_jax.envs.registry import make_expert
from crl_jax.training.tasks import episode_cap, household_split
from crl_jax.training.guided_demos import corrupt_plan, informed, own_plan_demo, plan_places
from crl_jax.training.logs import progress_bar
from crl_jax.training.warmstart import play_expert, plan_entry


def oracle_plans(sources, noise: int, max_turns: int, seed: int,
                 limit: int | None = None, peer: bool = False) -> dict[tuple[str, object], str]:
    """{(environment, task): the game's plan with ``noise`` wrong steps} for
    every task of ``sources`` (the first ``limit`` of each). The wrong steps
    are drawn once per game, from ``seed``: a game always gets the same entry.
    ``peer``: each game gets instead the plan of another of these games, of
    the same task type where there is one (a line as informative as a bank
    that retrieves the wrong game)."""
    plans, types = {}, {}
    for src in sources:
        tasks = src.tasks[:limit] if limit else src.tasks
        env, expert = src.make(), make_expert(src.expert)
        bar = progress_bar(len(tasks), f"oracle plans ({src.env_name})", "game")
        for i, task in enumerate(tasks):
            demo = play_expert(env, task, expert, max_turns * 3, src.env_name)
            if informed(src.env_name):
                demo = own_plan_demo(env, demo, max_turns * 3)
            line = plan_entry(demo)
            if noise:
                rng = np.random.default_rng([seed, i])
                alternatives = sorted(set(demo.actions))
                line = corrupt_plan(line, noise, rng,
                                    plan_places(src.env_name, demo.observations[0]), alternatives)
            plans[(src.env_name, task)] = line
            types[(src.env_name, task)] = demo.task_type
            bar.update(1)
        bar.close()
        env.close()
    return _peer_plans(plans, types, seed) if peer else plans


def _peer_plans(plans: dict, types: dict, seed: int) -> dict:
    rng = np.random.default_rng([seed, 7])
    keys = list(plans)
    out = {}
    for key in keys:
        others = [k for k in keys if k != key and k[0] == key[0]]
        same = [k for k in others if types[k] == types[key]] or others or [key]
        out[key] = plans[same[int(rng.integers(len(same)))]]
    return out


def oracle_entries(cfg, sources: dict) -> dict[str, dict]:
    """{split: {(environment, task): entry}} for the task sources of each
    split ("train": the RL pool, "eval", "unseen"). Task ids are indices
    into their split's games, so each split keeps its own table."""
    noise, seed = cfg.controls.oracle_noise, cfg.warm_start.seed
    out = {}
    for split, srcs in sources.items():
        limit = None if split == "train" else cfg.env.num_eval_tasks
        if cfg.controls.oracle_source in ("lesson", "lessonfirst"):
            out[split] = oracle_lessons(srcs, household_split(cfg), limit,
                                        first=cfg.controls.oracle_source == "lessonfirst")
        else:
            out[split] = oracle_plans(srcs, noise, episode_cap(cfg), seed, limit,
                                      peer=cfg.controls.oracle_source == "peer")
    return out


def oracle_lessons(sources, split, limit: int | None = None,
                   first: bool = False) -> dict[tuple[str, object], str]:
    """{(environment, task): the true lesson of the game's household for its
    goal's object type} (crl_jax/envs/alfworld_lessons.py); ``first``: the
    lesson cut to its first home, as LessonBook.first cuts it."""
    from crl_jax.envs.alfworld_households import household_index
    from crl_jax.envs.alfworld_lessons import first_home, true_lesson
    if split is None:
        raise ValueError("controls.oracle_source=lesson and lessonfirst need households "
                         "(env.households > 0)")
    members = {h.index: h for h in split.members()}
    lessons = {}
    for src in sources:
        env = src.make()
        for task in (src.tasks[:limit] if limit else src.tasks):
            record = env.games[task]
            household = members[household_index(record.id)]
            lesson = true_lesson(household, record.params["object_target"])
            lessons[(src.env_name, task)] = (first_home(lesson) if first else lesson).text
        env.close()
    return lessons


def oracle_retriever(plans: dict, env_name: str, tasks: Sequence, guided: Sequence[bool]):
    """A rollout retriever that answers the guided episodes of ``tasks`` (in
    order, as RolloutEngine.play asks) with their own game's plan."""
    wanted = [t for t, g in zip(tasks, guided) if g]

    def retrieve(queries, keys):
        if len(queries) != len(wanted):
            raise ValueError(f"{len(queries)} queries for {len(wanted)} guided episodes")
        return [(plans[(env_name, t)], None) for t in wanted]

    return retrieve
