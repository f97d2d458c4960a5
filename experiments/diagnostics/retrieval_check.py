"""Does the bank hold each pool game's entry, and does retrieval find it?

For each checkpoint of a run (its saved bank) and each game of the run's RL
pool: whether some entry names the game's goal, whether plain similarity
(the run's query, "goal: ..., observation: ...", against the entries; no
Eq. 6 penalties) ranks such an entry first, and whether a query of the goal
alone would. Separates "the extractor never wrote it" from "retrieval does
not find it" (the entry-quality metrics of a run show only what was read).

    python experiments/diagnostics/retrieval_check.py --run=experiments/figures/runs/alfworld_cpu-s2-8f0abbf30b

The run directory must still hold its checkpoints (figure records do not:
only the machine that made the run has them).
"""
from __future__ import annotations

import argparse
import os
import sys


import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a run directory with checkpoints/")
    args = parser.parse_args(argv)
    from crl_jax.experience import load_state
    from crl_jax.rl import prompts
    from crl_jax.training.components import task_pool, task_sources
    from crl_jax.training.config import RunConfig
    from crl_jax.training.config_io import load_config_json
    from crl_jax.training.setup import make_embedder

    ckpts = os.path.join(args.run, "checkpoints")
    if not os.path.isdir(ckpts):
        print(f"error: {args.run} holds no checkpoints/", file=sys.stderr)
        return 2
    cfg = load_config_json(RunConfig, os.path.join(args.run, "config.json"))
    embedder = make_embedder(cfg.experience.embedder)
    src = task_pool(cfg, task_sources(cfg, cfg.env.train_split, None)[0])
    env = src.make()
    goals, queries = [], []
    for task in src.tasks:
        obs, info = env.reset(task)
        goals.append(info.goal)
        queries.append(prompts.retrieval_query(info.goal, obs))
    env.close()
    q_full = _unit(embedder.embed(queries))
    q_goal = _unit(embedder.embed([f"goal: {g}" for g in goals]))
    print(f"{len(goals)} pool games of {cfg.name}; per checkpoint: entries, games with an entry "
          "for their goal, of those found first by the run's query / by the goal alone")
    for step in sorted(int(d) for d in os.listdir(ckpts) if d.isdigit()):
        state = load_state(os.path.join(ckpts, str(step), "files", "bank"), embedder.dim)
        if not state.entries:
            print(f"step {step}: empty bank")
            continue
        entry_goals = [e.text.partition(":")[0].strip() for e in state.entries]
        rows = _unit(np.stack([e.embedding for e in state.entries]))
        have = [g in entry_goals for g in goals]
        first = [entry_goals[j] == g for j, g in zip((q_full @ rows.T).argmax(1), goals)]
        first_goal = [entry_goals[j] == g for j, g in zip((q_goal @ rows.T).argmax(1), goals)]
        n = sum(have)
        print(f"step {step}: {len(state.entries)} entries, {n}/{len(goals)} games have one, "
              f"found first {sum(f for f, h in zip(first, have) if h)}/{n} by the run's query, "
              f"{sum(f for f, h in zip(first_goal, have) if h)}/{n} by the goal alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
