"""The actor's sampling on a real rollout phase: our sampler vs transformers' generate.

    python experiments/benchmarks/bench_rollout_workload.py [--config=alfworld_cpu] [--repeats=3]
        [--warm_start.cache_dir=DIR] [any --section.key=value of the preset, as for run.py]

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

import dataclasses
import os
import statistics
import sys
import tempfile
import time
from crl_jax.training import config_io
from experiments.configs import PRESETS
from experiments.diagnostics.warm_start_probe import PresetCommand, built_run


@dataclasses.dataclass(frozen=True)
class WorkloadCommand(PresetCommand):
    """The preset whose rollout phase is recorded, and the replays."""

    repeats: int = 3
    """Timed replays of the whole phase per engine (the median is reported)."""


def record_phase(run):
    """One RL step of the run; returns (calls, step metrics), calls = [(prompts, row tokens)]."""
    from crl_jax.training.step import RunState, train_step

    calls = []
    generate = run.sampler.generate

    def recording(prompts, config, *args, **kwargs):
        result = generate(prompts, config, *args, **kwargs)
        calls.append(([list(p) for p in prompts], [len(t) for t in result.tokens]))
        return result

    run.sampler.generate = recording
    try:
        _, metrics = train_step(run, RunState.fresh(run.cfg.train.seed))
    finally:
        run.sampler.generate = generate
    return calls, metrics


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


def main(argv=None) -> int:
    from models.checkpoint import save_checkpoint

    command = config_io.parse_preset_command(WorkloadCommand, sys.argv[1:] if argv is None else argv,
                                             "alfworld_cpu", __doc__, presets=PRESETS)
    if command.repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    print(f"load average before the run: {load_before:.2f}"
          + (" (warning: above 1, the machine is not quiet: the ratio is not a result)"
             if load_before > 1 else ""))
    with built_run(command.cfg, "rollout_workload_") as run, tempfile.TemporaryDirectory() as hf:
        calls, metrics = record_phase(run)
        model = run.actor.model
        run.sampler.update_params(model)  # both engines replay the same (post-step) weights
        save_checkpoint(model, hf, dtype="float32")
        useful = sum(sum(lengths) for _, lengths in calls)
        rows = [len(p) for p, _ in calls]
        widths = [len(p) for prompts, _ in calls for p in prompts]
        print(f"{command.config}: {len(calls)} sampler calls in the step's rollout phase, "
              f"{min(rows)}-{max(rows)} rows a call, prompts of {min(widths)}-{max(widths)} tokens, "
              f"{useful} useful new tokens; the trainer's own rate in that phase: "
              f"{metrics.get('rollout/sampler_tokens_per_s', float('nan')):.0f} tok/s")
        engines = {"ours": ours(run, calls), "torch": torch_engine(hf, calls, model.cfg.pad_token_id or 0)}
        for replay in engines.values():
            replay()  # compile every shape / warm up
        seconds = {name: [] for name in engines}
        for _ in range(command.repeats):
            for name, replay in engines.items():
                start = time.perf_counter()
                replay()
                seconds[name].append(time.perf_counter() - start)
        rate = {name: useful / statistics.median(s) for name, s in seconds.items()}
        print(f"load {os.getloadavg()[0]:.2f}: ours {rate['ours']:.0f} tok/s, transformers "
              f"{rate['torch']:.0f} tok/s, ours / transformers {rate['ours'] / rate['torch']:.2f}x "
              f"(median of {command.repeats} replays each, engines alternating)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
