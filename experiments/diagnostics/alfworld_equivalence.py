"""Replay the same action sequences through the real and the fast ALFWorld
engines and compare every observation, admissible list and win.

    .venv/bin/python experiments/diagnostics/alfworld_equivalence.py --split=valid_unseen --games=134
    .venv/bin/python experiments/diagnostics/alfworld_equivalence.py --generated=30

Action sequences: expert actions, random admissible actions, and invalid
inputs (old `put X in/on Y` syntax, wrong case, empty, long junk); see
crl_jax/envs/alfworld_compare.py.
"""
from __future__ import annotations

import random
import time

from absl import app, flags

from crl_jax.envs import alfworld_data as data
from crl_jax.envs.alfworld_compare import compare_engines
from crl_jax.envs.alfworld_env import spec_for
from crl_jax.envs.alfworld_fast import FastAlfredEngine
from crl_jax.envs.alfworld_generator import generate_games
from crl_jax.envs.alfworld_real import RealAlfredEngine

FLAGS = flags.FLAGS
flags.DEFINE_string("split", "valid_unseen", "pack split")
flags.DEFINE_integer("games", 20, "pack games (evenly spaced over the split)")
flags.DEFINE_integer("generated", 0, "also compare this many generated games")
flags.DEFINE_integer("steps", 40, "steps per episode")
flags.DEFINE_integer("seed", 0, "seed of the action sequences")
flags.DEFINE_string("policy", "mixed", "mixed | random | expert")


def main(argv):
    del argv
    chosen = []
    if FLAGS.games:
        records = data.load_pack(FLAGS.split)
        chosen += list(records[::max(1, len(records) // FLAGS.games)][:FLAGS.games])
    chosen += list(generate_games(FLAGS.generated, seed=FLAGS.seed))
    rng = random.Random(FLAGS.seed)
    total_steps, mismatches, wins = 0, 0, 0
    start = time.time()
    for i, rec in enumerate(chosen):
        spec = spec_for(rec)
        result = compare_engines(rec, RealAlfredEngine(rec), FastAlfredEngine(rec, spec),
                                 FLAGS.steps, rng, FLAGS.policy, spec)
        total_steps += result.steps
        wins += result.won
        if result.mismatch:
            mismatches += 1
            history, real, fast = result.mismatch
            print(f"MISMATCH {rec.id} after {history}\n  real: {real}\n  fast: {fast}")
        print(f"[{i + 1}/{len(chosen)}] {rec.task_type} steps={result.steps} won={result.won} "
              f"match={result.mismatch is None} ({time.time() - start:.0f}s)", flush=True)
    print(f"compared {len(chosen)} games, {total_steps} steps (+{len(chosen)} resets): "
          f"{len(chosen) - mismatches} matched, {mismatches} mismatched; {wins} episodes won")


if __name__ == "__main__":
    app.run(main)
