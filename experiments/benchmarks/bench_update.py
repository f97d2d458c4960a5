"""Seconds per actor update with micro-batches cut to their own width
(crl_jax.rl.learner.micro_batch_plan) against the same update at the batch's
full width, in the same process, on the CPU presets' tiny actor.

    python experiments/benchmarks/bench_update.py            # mixture and single-game batches
    python experiments/benchmarks/bench_update.py --quick    # fewer sequences, < 2 minutes

A batch is --sequences turns whose prompt lengths are drawn from a mix: the
"mixture" case draws from --mix_lengths (short MiniHack prompts beside long
WebShop/ALFWorld ones, as in the multi-task presets), the "one game" case from
a narrow band around --one_length. Each timed repeat is one policy_step after
a warm-up step that compiles every width; the median is reported, and the
ratio full / trimmed is the speedup.
"""
from __future__ import annotations

import json
import statistics
import time

from absl import app, flags

flags.DEFINE_integer("sequences", 512, "turns in one update batch")
flags.DEFINE_list("mix_lengths", ["60", "120", "250", "500"], "prompt lengths of the mixture")
flags.DEFINE_integer("one_length", 250, "centre of the single-game prompt lengths (+-10%)")
flags.DEFINE_integer("micro_batch", 64, "sequences per micro-batch (the CPU presets': 64)")
flags.DEFINE_integer("repeats", 3, "timed repeats (median reported)")
flags.DEFINE_bool("quick", False, "128 sequences, 2 repeats")
flags.DEFINE_string("json", None, "write results as JSON to this path")
FLAGS = flags.FLAGS


def _batch(lengths, vocab: int, seed: int):
    import numpy as np

    from crl_jax.rl.batch import Sample
    rng = np.random.default_rng(seed)
    samples = []
    for n in lengths:
        action = int(rng.integers(2, 6))
        tokens = rng.integers(3, vocab, size=int(n) + action).tolist()
        lp = np.concatenate([np.zeros(int(n)), -rng.uniform(0.5, 3.0, size=action)])
        samples.append(Sample(tokens, [0] * int(n) + [1] * action, lp, float(rng.normal())))
    return samples


def _median_step_s(learner, packed, repeats: int) -> float:
    learner.policy_step(packed)  # compiles every width this batch needs
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        learner.policy_step(packed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv):
    del argv
    import numpy as np

    from crl_jax.rl.batch import pack_samples

    from crl_jax.rl.learner import Learner, OptimConfig
    from kernels.policy_losses import PolicyLossConfig
    from models.config import DecoderConfig
    from models.decoder import init_decoder

    n = 128 if FLAGS.quick else FLAGS.sequences
    repeats = 2 if FLAGS.quick else FLAGS.repeats
    vocab = 1024  # the CPU presets' environment tokenizer
    cfg = DecoderConfig(family="qwen3", vocab_size=vocab, hidden_size=128, intermediate_size=384,
                        num_layers=2, num_heads=4, num_kv_heads=2, head_dim=32,
                        tie_embeddings=True, qk_norm=True, eos_token_id=1)
    model = init_decoder(cfg, seed=0)
    rng = np.random.default_rng(0)
    mix = [int(x) for x in FLAGS.mix_lengths]
    cases = {"mixture": rng.choice(mix, size=n),
             "one game": rng.integers(int(FLAGS.one_length * 0.9), int(FLAGS.one_length * 1.1) + 1,
                                      size=n)}
    results = []
    for name, lengths in cases.items():
        packed = pack_samples(_batch(lengths, vocab, 1), pad_id=0, micro_batch=FLAGS.micro_batch)
        row = {"case": name, "sequences": n, "width": int(packed.tokens.shape[1]),
               "mean_length": float(np.mean(lengths))}
        for trim in (False, True):
            learner = Learner(model, OptimConfig(lr=1e-4, micro_batch=FLAGS.micro_batch),
                              PolicyLossConfig.split_grpo_released(), trim_padding=trim)
            row["trimmed_s" if trim else "full_width_s"] = _median_step_s(learner, packed, repeats)
        row["speedup"] = row["full_width_s"] / row["trimmed_s"]
        results.append(row)
        print(f"{name:9s} {n} sequences, mean prompt {row['mean_length']:.0f} of width "
              f"{row['width']}: full width {row['full_width_s']:.2f} s, trimmed "
              f"{row['trimmed_s']:.2f} s per update -> {row['speedup']:.2f}x", flush=True)
    if FLAGS.json:
        with open(FLAGS.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    app.run(main)
