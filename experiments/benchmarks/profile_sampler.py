"""Where a generate call of our sampler spends its time, per compiled operation.

    python experiments/benchmarks/profile_sampler.py                 # batch 64
    python experiments/benchmarks/profile_sampler.py --batch=8 --top=12

The model and prompts are bench_sampler.py's (the same flags: --hidden,
--layers, --vocab, --prompt_len, --new_tokens). Prints:

1. the split of one generate call: the prompt block (a call with one new
   token) against the whole call;
2. one decode step (an iteration of the compiled decode loop, from
   jax.profiler's trace of a whole call): its wall time, the number of
   operations XLA ran, their summed time (above the wall time when
   operations ran side by side on several cores), and that time by kind:
   the operation's name in the jaxpr (dot_general, reduce_sum, ...) and
   its output shape, the largest first.

Operation names are mapped to jaxpr names through the decode program's
compiled HLO, so the rows name what the model code wrote. Tracing slows
each operation a little; the split in (1) is timed without the tracer.
"""
from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import statistics
import tempfile
import time

from absl import app, flags

from experiments.benchmarks import bench_sampler

flags.DEFINE_integer("batch", 64, "rows in the generate call")
flags.DEFINE_integer("top", 16, "kinds of operation to list")
FLAGS = flags.FLAGS


def _timed(fn, repeats: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hlo_kinds(hlo_text: str) -> dict[str, str]:
    """Compiled HLO instruction name -> "jaxpr op  output shape"."""
    kinds = {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = (\S+) ", line)
        if m:
            op = re.search(r'op_name="([^"]+)"', line)
            name = op.group(1).rsplit("/", 1)[-1] if op else m.group(1).split(".")[0]
            kinds[m.group(1)] = f"{name:<14} {m.group(2).split('{')[0]}"
    return kinds


def decode_step_profile(trace_dir: str, kinds: dict[str, str], iterations: int) -> dict:
    """Per decode-loop iteration: wall time, operations and their time by kind."""
    files = sorted(glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True))
    if not files:
        raise RuntimeError(f"jax.profiler wrote no trace under {trace_dir}")
    with gzip.open(files[-1]) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("name") in kinds]
    events.sort(key=lambda e: e["ts"])
    # An operation of the loop body marks each iteration. The prefill
    # program's operations can bear the same names (each program numbers its
    # own), once each before the loop: a marker may occur once more, and its
    # last `iterations` occurrences are the loop's.
    counts = collections.Counter(e["name"] for e in events)
    marker = next((n for n, c in counts.items() if c in (iterations, iterations + 1)), None)
    if marker is None or iterations < 4:
        raise RuntimeError(f"no operation ran once per decode iteration ({iterations})")
    starts = [e["ts"] for e in events if e["name"] == marker][-iterations:]
    first, last = iterations // 4, 3 * iterations // 4  # steady state, away from the ends
    t0, t1 = starts[first], starts[last]
    n = last - first
    inside = [e for e in events if t0 <= e["ts"] < t1]
    by_kind = collections.defaultdict(lambda: [0.0, 0.0])
    for e in inside:
        row = by_kind[kinds[e["name"]]]
        row[0] += e.get("dur", 0) / n / 1e3
        row[1] += 1 / n
    return dict(wall_ms=(t1 - t0) / n / 1e3, ops=len(inside) / n,
                op_ms=sum(e.get("dur", 0) for e in inside) / n / 1e3,
                by_kind=sorted(by_kind.items(), key=lambda kv: -kv[1][0]))


def main(_):
    import jax

    from models.checkpoint import load_checkpoint
    from models.sampler import Sampler
    from models.sampling_ops import SamplingConfig

    print(f"load average: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_sampler._make_checkpoint(tmp)
        sampler = Sampler(load_checkpoint(tmp), prompt_bucket=32, cache_bucket=128,
                          new_tokens_bucket=32)
    prompts = bench_sampler._prompts(FLAGS.batch)
    whole = SamplingConfig(temperature=0.0, max_new_tokens=FLAGS.new_tokens,
                           check_every=FLAGS.new_tokens)
    prompt_only = SamplingConfig(temperature=0.0, max_new_tokens=1)
    t_whole = _timed(lambda: sampler.generate(prompts, whole))
    t_prompt = _timed(lambda: sampler.generate(prompts, prompt_only))
    new = FLAGS.batch * FLAGS.new_tokens
    print(f"batch {FLAGS.batch}, prompt {FLAGS.prompt_len}, {FLAGS.new_tokens} new tokens: "
          f"{t_whole * 1e3:.1f} ms a call ({new / t_whole:.0f} new tok/s); the prompt block "
          f"(a call with 1 new token) {t_prompt * 1e3:.1f} ms, {t_prompt / t_whole:.0%}")

    hlo = sampler.decode_program(prompts, whole).as_text()
    with tempfile.TemporaryDirectory() as trace_dir:
        jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
        sampler.generate(prompts, whole)
        jax.profiler.stop_trace()
        # The prefill samples the first token; the loop, one a step after it.
        prof = decode_step_profile(trace_dir, hlo_kinds(hlo), FLAGS.new_tokens - 1)
    print(f"decode step (traced; {FLAGS.new_tokens - 1} in the call): "
          f"{prof['wall_ms']:.2f} ms wall, {prof['ops']:.0f} operations, "
          f"{prof['op_ms']:.2f} ms of operation time")
    print(f"{'ms/step':>8} {'ops/step':>8}  kind (jaxpr op, output shape)")
    for kind, (ms, count) in prof["by_kind"][:FLAGS.top]:
        print(f"{ms:>8.3f} {count:>8.1f}  {kind}")


if __name__ == "__main__":
    app.run(main)
