"""The warm-started actor's own episodes, for the extractor's warm start on households.

In RL the extractor reads the actor's episodes, and an extractor taught on
the expert's reads them far worse than the expert's (docs/FINDINGS.md,
"Households: the extractor reads the expert's episodes, not the actor's"):
a wandering expert's random detours did not close the gap, since the
actor's detours follow its own habits. So the warm-started actor itself
plays games of the warm start's households, as RL plays them (the RL turn
cap, sampling at temperature 1), free or reading its household's lesson
cut to its first home (the form a bank's lesson read from one episode
has), and each episode reaches the extractor's warm start with the lesson
it shows (lesson_demos.trajectory_lesson): what the rule reader
(controls.lesson_reader=rule) would write for it.

The games are the demonstrations' (the warm start's households, never the
RL pool's), so the extractor sees no game RL plays.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from crl_jax.rl.episode import Episode
from crl_jax.rl.rollout import RolloutEngine
from crl_jax.training.lesson_demos import LessonBook
from crl_jax.training.logs import progress_bar
from crl_jax.training.tasks import household_split
from crl_jax.training.warmstart import Demo
from models.sampler import Sampler

# Episodes played in one call: one batched sampler call a turn.
PLAY_BATCH = 64


def episode_demo(ep: Episode, env_name: str) -> Demo:
    """An episode as a demonstration: the actions it sent (an answer that
    named none as the text it wrote, as Episode.trajectory_text shows it to
    the extractor) and the observations they got; search-and-ask turns left
    out (they change nothing in the world). ``env_name``: the environment's
    registry name (an episode knows its environment's display name)."""
    played = [t for t in ep.turns if t.asked is None]
    observations = [ep.first_observation, *(t.observation for t in played)]
    return Demo(env_name, ep.task, ep.goal, observations,
                [t.action or t.text.strip() for t in played], bool(ep.won),
                experience=ep.experience, source="actor")


def chosen_games(demos: Sequence[Demo], fraction: float, rng: np.random.Generator) -> list[Demo]:
    """The demonstrations whose games the actor plays: ``fraction`` of them
    (rounded), drawn without replacement, in their order."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction!r}")
    n = int(round(fraction * len(demos)))
    keep = set(rng.choice(len(demos), size=n, replace=False).tolist()) if n else set()
    return [d for i, d in enumerate(demos) if i in keep]


def actor_episode_demos(cfg, actor, tok, sources: Sequence, demos: Sequence[Demo],
                        fraction: float, max_turns: int, rng: np.random.Generator) -> list[Demo]:
    """One episode of the warm-started ``actor`` (a Learner; ``tok`` its
    tokenizer) on ``fraction`` of the demonstrations' games, from the source
    (env_name, make) of each one's environment. A game is guided with
    probability warm_start.guided_fraction: its line is the household's
    lesson cut to its first home (LessonBook.first). Episodes end at
    ``max_turns``."""
    split = household_split(cfg)
    if split is None:
        raise ValueError("the actor's episodes for the extractor need env.households > 0")
    book = LessonBook(split)
    by_env = {s.env_name: s for s in sources}
    games = chosen_games(demos, fraction, rng)
    missing = sorted({d.env_name for d in games} - set(by_env))
    if missing:
        raise ValueError(f"no task source for the demonstrations of {missing}")
    rollout = dataclasses.replace(cfg.rollout, max_turns=max_turns, temperature=1.0, top_p=1.0,
                                  top_k=0)
    engine = RolloutEngine(Sampler(actor.model, pad_id=tok.pad_id), tok, rollout)
    out: list[Demo] = []
    bar = progress_bar(len(games), "actor's episodes for the extractor", "episode")
    try:
        for name, src in by_env.items():
            mine = [d for d in games if d.env_name == name]
            envs = [src.make() for _ in range(min(PLAY_BATCH, len(mine)))]
            try:
                for start in range(0, len(mine), PLAY_BATCH):
                    out += [episode_demo(ep, name) for ep in _play(
                        engine, envs, mine[start:start + PLAY_BATCH], book,
                        cfg.warm_start.guided_fraction, rng, bar.update)]
            finally:
                for env in envs:
                    env.close()
    finally:
        bar.close()
    return out


def _play(engine: RolloutEngine, envs: Sequence, games: Sequence[Demo], book: LessonBook,
          guided_fraction: float, rng: np.random.Generator, progress) -> list[Episode]:
    """One batch: each game played once, the guided ones reading their
    household's first-home lesson."""
    tasks = [d.task for d in games]
    guided = [bool(rng.random() < guided_fraction) for _ in games]
    lines = [book.first(envs[0].games[t]).text for t, g in zip(tasks, guided) if g]

    def retrieve(queries: list[str], keys: list[str]) -> list[tuple[str, int]]:
        # The engine asks for the guided episodes in episode order.
        if len(queries) != len(lines):
            raise RuntimeError(f"{len(queries)} retrievals for {len(lines)} guided episodes")
        return [(line, -1) for line in lines]

    return engine.play(envs[:len(games)], tasks, guided, retrieve,
                       seed=int(rng.integers(1 << 31)), progress=progress)
