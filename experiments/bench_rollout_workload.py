"""The actor's sampling on a real rollout phase: our sampler vs transformers' generate.

    python experiments/bench_rollout_workload.py [--config=alfworld_cpu] [--repeats=3]
        [--warm_start.cache_dir=DIR]

1. Builds the preset's run (its warm start from the cache, or trained here:
   minutes) and plays one RL step, recording every call the rollout makes to
   the actor's sampler: the prompts (token ids of mixed lengths; fewer rows as
   episodes end) and how many tokens each row got before its stop string.
2. Replays the recorded calls through our Sampler and through transformers'
   `generate` (PyTorch) on the same weights (the actor after that step, saved
   in the Hugging Face layout), greedily, each call decoding as many steps as
   its longest row did, left-padded to one batch in both engines. The tokens
   counted are the rows' recorded tokens, the same for both: the useful work
   of the phase. The engines alternate every repeat; the load average is
   printed before and with the result.

bench_sampler.py measures the engines on uniform batches; this is the
workload the trainer gives them.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

flags.DEFINE_string("config", "alfworld_cpu", "CPU preset whose rollout phase is recorded")
flags.DEFINE_integer("repeats", 3, "timed replays of the whole phase per engine (median reported)")
flags.DEFINE_list("set", [], "overrides of the preset, key=value (e.g. warm_start.cache_dir=DIR)")
FLAGS = flags.FLAGS


def record_phase(cfg, out_dir: str):
    """One RL step of the preset; returns (run, calls, step metrics), calls = [(prompts, row tokens)]."""
    from crl_jax.training.components import build_run
    from crl_jax.training.step import RunState, train_step

    run = build_run(cfg, out_dir)
    calls = []
    generate = run.sampler.generate

    def recording(prompts, config, *args, **kwargs):
        result = generate(prompts, config, *args, **kwargs)
        calls.append(([list(p) for p in prompts], [len(t) for t in result.tokens]))
        return result

    run.sampler.generate = recording
    try:
        _, metrics = train_step(run, RunState.fresh(cfg.train.seed))
    finally:
        run.sampler.generate = generate
    return run, calls, metrics


def ours(run, calls):
    from models.sampling_ops import SamplingConfig

    def replay():
        for prompts, lengths in calls:
            steps = max(max(lengths), 1)
            run.sampler.generate(prompts, SamplingConfig(temperature=0.0, max_new_tokens=steps,
                                                         check_every=steps))
    return replay


def torch_engine(path: str, calls, pad_id: int):
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path).float().eval()

    def replay():
        for prompts, lengths in calls:
            steps = max(max(lengths), 1)
            width = max(len(p) for p in prompts)
            ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
            with torch.no_grad():
                model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=steps,
                               min_new_tokens=steps, pad_token_id=pad_id, eos_token_id=None)
    return replay


def main(_):
    from crl_jax.training.config_io import apply_overrides, load_preset
    from models.checkpoint import save_checkpoint

    load_before = os.getloadavg()[0]
    print(f"load average before the run: {load_before:.2f}"
          + (" (warning: above 1, the machine is not quiet: the ratio is not a result)"
             if load_before > 1 else ""))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = apply_overrides(load_preset(FLAGS.config), [*FLAGS.set, f"train.out_dir={tmp}/run"])
        run, calls, metrics = record_phase(cfg, f"{tmp}/run")
        model = run.actor.model
        run.sampler.update_params(model)  # both engines replay the same (post-step) weights
        save_checkpoint(model, f"{tmp}/hf", dtype="float32")
        useful = sum(sum(lengths) for _, lengths in calls)
        rows = [len(p) for p, _ in calls]
        widths = [len(p) for prompts, _ in calls for p in prompts]
        print(f"{FLAGS.config}: {len(calls)} sampler calls in the step's rollout phase, "
              f"{min(rows)}-{max(rows)} rows a call, prompts of {min(widths)}-{max(widths)} tokens, "
              f"{useful} useful new tokens; the trainer's own rate in that phase: "
              f"{metrics.get('rollout/sampler_tokens_per_s', float('nan')):.0f} tok/s")
        engines = {"ours": ours(run, calls),
                   "torch": torch_engine(f"{tmp}/hf", calls, model.cfg.pad_token_id or 0)}
        for replay in engines.values():
            replay()  # compile every shape / warm up
        seconds = {name: [] for name in engines}
        for _ in range(FLAGS.repeats):
            for name, replay in engines.items():
                start = time.perf_counter()
                replay()
                seconds[name].append(time.perf_counter() - start)
        rate = {name: useful / statistics.median(s) for name, s in seconds.items()}
        print(f"load {os.getloadavg()[0]:.2f}: ours {rate['ours']:.0f} tok/s, transformers "
              f"{rate['torch']:.0f} tok/s, ours / transformers {rate['ours'] / rate['torch']:.2f}x "
              f"(median of {FLAGS.repeats} replays each, engines alternating)")
        run.close()


if __name__ == "__main__":
    app.run(main)
