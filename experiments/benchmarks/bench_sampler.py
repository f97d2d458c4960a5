"""New tokens per second of our KV-cache sampler vs transformers' PyTorch
`generate`, on the same checkpoint, same prompts, in the same process.

    python experiments/benchmarks/bench_sampler.py            # batch 8, 32 and 64
    python experiments/benchmarks/bench_sampler.py --quick    # smaller, < 1 minute

Both engines decode greedily for exactly --new_tokens tokens (no EOS stop),
so the work is identical. The engines alternate within each repeat (a
background job slows both alike). The load average is printed before the
engines start, with a warning above 1 (contention hurts the engines
unequally, so such a ratio is not a result), and with each row (where it
includes the benchmark's own threads). The bound column is the model's
weight matmuls alone, jitted at the same batch, weights passed as arguments
as the sampler's are: the prompt's tokens once, then --new_tokens decode
steps in a loop; what a decoder could reach if everything but its matmuls
(attention over the cache included) were free.

With --host_devices=N > 1 (default: one per core, cut to divide every batch
size) our sampler and the bound also run with the batch split over a 'data'
mesh of N XLA host devices, the weights replicated (columns "x N"): on one
device XLA's CPU runtime runs a step's operations one after another; with one
device per core each core runs its rows' whole step, as torch's intra-op
threads use every core too.

Peak memory is the peak resident set size of a child process that runs one
engine alone (--engine=jax|torch), since both engines share the host
allocator in the main process. It is reported whole and above the child's
footprint after imports (the model + cache + work).
"""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

flags.DEFINE_list("batch_sizes", ["8", "32", "64"], "batch sizes to measure")
flags.DEFINE_integer("prompt_len", 64, "prompt tokens per row")
flags.DEFINE_integer("new_tokens", 64, "new tokens per row")
flags.DEFINE_integer("hidden", 256, "model width")
flags.DEFINE_integer("layers", 4, "decoder layers")
flags.DEFINE_integer("vocab", 2048, "vocabulary size")
flags.DEFINE_integer("repeats", 3, "timed repeats (median reported)")
flags.DEFINE_integer("host_devices", None,
                     "also run our sampler (and the bound) with the batch split over this many "
                     "XLA host devices (a 'data' mesh); 1: one device only; default: one per "
                     "core, at most the largest count that divides every batch size")
flags.DEFINE_bool("quick", False, "small run that finishes in under a minute")
flags.DEFINE_string("json", None, "write results as JSON to this path")
flags.DEFINE_enum("engine", None, ["jax", "torch"], "internal: run one engine for peak memory")
flags.DEFINE_string("checkpoint", None, "internal: checkpoint directory")
FLAGS = flags.FLAGS


def _make_checkpoint(path: str) -> None:
    import torch
    import transformers

    cfg = transformers.Qwen2Config(
        vocab_size=FLAGS.vocab, hidden_size=FLAGS.hidden, intermediate_size=FLAGS.hidden * 3,
        num_hidden_layers=FLAGS.layers, num_attention_heads=FLAGS.hidden // 32,
        num_key_value_heads=max(1, FLAGS.hidden // 64), tie_word_embeddings=True,
        max_position_embeddings=4096)
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(cfg).float().save_pretrained(path)


def _prompts(batch: int):
    import numpy as np
    rng = np.random.default_rng(batch)
    return [rng.integers(3, FLAGS.vocab, size=FLAGS.prompt_len).tolist() for _ in range(batch)]


def _data_mesh():
    """A 'data' mesh over the host devices (--host_devices of them)."""
    import jax
    from models.sharding import MeshConfig, make_mesh
    return make_mesh(MeshConfig(data=FLAGS.host_devices, fsdp=1, tp=1),
                     jax.devices()[:FLAGS.host_devices])


def _jax_runner(path: str, mesh=None):
    """Our sampler; with ``mesh``, its weights replicated on the mesh and
    the batch (its cache) split over the mesh's 'data' axis, as a run with
    ``mesh_data`` = devices lays out its actor."""
    from models.checkpoint import load_checkpoint
    from models.sampler import Sampler
    from models.sampling_ops import SamplingConfig

    sampler = Sampler(load_checkpoint(path, mesh=mesh), prompt_bucket=32, cache_bucket=128,
                      new_tokens_bucket=32)
    cfg = SamplingConfig(temperature=0.0, max_new_tokens=FLAGS.new_tokens,
                         check_every=FLAGS.new_tokens)

    def run(prompts):
        res = sampler.generate(prompts, cfg)
        return sum(len(t) for t in res.tokens)
    return run


def _torch_runner(path: str):
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(path).float().eval()

    def run(prompts):
        ids = torch.tensor(prompts)
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=FLAGS.new_tokens, min_new_tokens=FLAGS.new_tokens,
                                 pad_token_id=0, eos_token_id=None)
        return (out.shape[1] - ids.shape[1]) * out.shape[0]
    return run


def _bound_runner(mesh=None):
    """The weight matmuls a generate call cannot avoid, in one jitted
    program: the prompt's (q, k, v, o, gate, up, down per layer over every
    prompt token, the unembedding at its last position), then one decoded
    token per row (the same, and the unembedding), --new_tokens steps in a
    loop; no attention, norms, embeddings or sampling. Both engines pay for
    the prompt too, so a bound without it would be out of reach by design."""
    import jax
    import jax.numpy as jnp

    d, f, v = FLAGS.hidden, FLAGS.hidden * 3, FLAGS.vocab
    kv = max(1, FLAGS.hidden // 64) * 32
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 8 * FLAGS.layers + 1))
    layers = [[jax.random.normal(next(keys), s) * 0.02
               for s in ((d, d), (d, kv), (d, kv), (d, d), (d, f), (d, f), (f, d))]
              for _ in range(FLAGS.layers)]
    head = jax.random.normal(next(keys), (d, v)) * 0.02
    rows = None
    if mesh is not None:  # weights replicated, rows split over 'data'
        from jax.sharding import NamedSharding, PartitionSpec
        layers, head = jax.device_put((layers, head), NamedSharding(mesh, PartitionSpec()))
        rows = NamedSharding(mesh, PartitionSpec("data"))

    def through_layers(h, layers):
        for wq, wk, wv, wo, wg, wu, wd in layers:
            a = (h @ wq) @ wo + ((h @ wk).sum() + (h @ wv).sum()) * 0.0
            h = h + (jax.nn.silu(a @ wg) * (a @ wu)) @ wd
        return h

    @jax.jit
    def generate(prompt, layers, head):  # prompt [B, P, d]
        h = through_layers(prompt.reshape(-1, d), layers).reshape(prompt.shape)
        x = h[:, -1] + (h[:, -1] @ head)[:, :1] * 1e-6

        def step(_, x):
            return x + (through_layers(x, layers) @ head)[:, :1] * 1e-6
        return jax.lax.fori_loop(0, FLAGS.new_tokens - 1, step, x)

    def run(prompts):
        prompt = jax.device_put(jnp.ones((len(prompts), FLAGS.prompt_len, d)), rows)
        generate(prompt, layers, head).block_until_ready()
        return len(prompts) * FLAGS.new_tokens
    return run


def _time_interleaved(runs: dict, prompts) -> dict:
    """Median tokens/s of each engine, the engines alternating every repeat."""
    for run in runs.values():
        run(prompts)  # compile / warm up
    rates = {name: [] for name in runs}
    for _ in range(FLAGS.repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            n = run(prompts)
            rates[name].append(n / (time.perf_counter() - start))
    return {name: statistics.median(r) for name, r in rates.items()}


def _status_mb(key: str) -> float:
    # /proc/self/status, not ru_maxrss: ru_maxrss survives exec and would
    # report the parent's peak.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{key} not in /proc/self/status")


def _child_peak_rss_mb(engine: str, path: str, batch: int) -> tuple[float, float]:
    cmd = [sys.executable, os.path.abspath(__file__), f"--engine={engine}", f"--checkpoint={path}",
           f"--batch_sizes={batch}", f"--new_tokens={FLAGS.new_tokens}",
           f"--prompt_len={FLAGS.prompt_len}", f"--vocab={FLAGS.vocab}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    base, peak = map(float, out.stdout.strip().splitlines()[-1].split())
    return peak, peak - base


def _torch_threads() -> int:
    import torch
    return torch.get_num_threads()


def _host_devices() -> int:
    """--host_devices, checked; by default one per core, cut to a count that
    divides every batch size (each device holds whole rows)."""
    batches = [int(b) for b in FLAGS.batch_sizes]
    n = FLAGS.host_devices
    if n is None:
        n = math.gcd(len(os.sched_getaffinity(0)), *batches)
    if n < 1 or any(b % n for b in batches):
        raise app.UsageError(f"--host_devices={n} must be at least 1 and divide every batch size "
                             f"({', '.join(map(str, batches))})")
    return n


def main(_):
    FLAGS.host_devices = _host_devices()
    if FLAGS.host_devices > 1 and not FLAGS.engine:
        # XLA reads the host device count when jax first loads, so before any import of it.
        if "jax" in sys.modules:
            raise RuntimeError("--host_devices needs to be set before jax is imported")
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_"
                                   f"platform_device_count={FLAGS.host_devices}").strip()
    if FLAGS.quick:
        FLAGS.new_tokens, FLAGS.repeats, FLAGS.prompt_len = 32, 2, 32
    if FLAGS.engine:  # child: one engine, one batch, print peak RSS in MB
        if FLAGS.engine == "jax":
            import jax.numpy as jnp  # noqa: F401  (count library imports in the baseline)
            import models.sampler  # noqa: F401
        else:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        base = _status_mb("VmRSS")
        run = (_jax_runner if FLAGS.engine == "jax" else _torch_runner)(FLAGS.checkpoint)
        run(_prompts(int(FLAGS.batch_sizes[0])))
        print(base, _status_mb("VmHWM"))
        return
    results = []
    n_dev = FLAGS.host_devices
    # The load before any engine runs: during the run the benchmark's own
    # threads (both engines use every core) count in the load average too.
    load_before = os.getloadavg()[0]
    print(f"load average before the run: {load_before:.2f}"
          + (" (warning: above 1, the machine is not quiet: these rows are not a result)"
             if load_before > 1 else ""))
    with tempfile.TemporaryDirectory() as path:
        _make_checkpoint(path)
        runs = {"ours": _jax_runner(path), "torch": _torch_runner(path), "bound": _bound_runner()}
        if n_dev > 1:
            mesh = _data_mesh()
            runs.update(ours_mesh=_jax_runner(path, mesh), bound_mesh=_bound_runner(mesh))
        print(f"model: Qwen2-shaped d={FLAGS.hidden} layers={FLAGS.layers} vocab={FLAGS.vocab}, "
              f"prompt {FLAGS.prompt_len}, {FLAGS.new_tokens} new tokens, greedy; torch "
              f"{_torch_threads()} intra-op threads; ours on 1 device"
              + (f" and on {n_dev} host devices (x{n_dev}: the batch split over a data mesh)"
                 if n_dev > 1 else ""))
        mesh_head = (f" {f'ours x{n_dev}':>9} {f'x{n_dev}/torch':>8} {f'bound x{n_dev}':>9} "
                     f"{f'x{n_dev}/bound':>8}" if n_dev > 1 else "")
        print(f"{'batch':>5} {'load':>5} {'ours tok/s':>11} {'torch tok/s':>12} {'ours/torch':>10} "
              f"{'bound tok/s':>12} {'ours/bound':>10}{mesh_head} {'ours peak/+work MB':>19} "
              f"{'torch peak/+work MB':>20} {'work mem ratio':>14}")
        for batch in map(int, FLAGS.batch_sizes):
            prompts = _prompts(batch)
            load = os.getloadavg()[0]
            rate = _time_interleaved(runs, prompts)
            a, b, bound = rate["ours"], rate["torch"], rate["bound"]
            ma, wa = _child_peak_rss_mb("jax", path, batch)
            mb, wb = _child_peak_rss_mb("torch", path, batch)
            row = dict(batch=batch, load_average=load, ours_tok_s=a, torch_tok_s=b,
                       speed_ratio=a / b, bound_tok_s=bound, bound_ratio=a / bound,
                       ours_peak_rss_mb=ma, torch_peak_rss_mb=mb, ours_work_mb=wa,
                       torch_work_mb=wb, work_mem_ratio=wa / wb)
            mesh_cols = ""
            if n_dev > 1:
                am, bm = rate["ours_mesh"], rate["bound_mesh"]
                row.update(host_devices=n_dev, ours_mesh_tok_s=am, mesh_speed_ratio=am / b,
                           bound_mesh_tok_s=bm, mesh_bound_ratio=am / bm)
                mesh_cols = f" {am:>9.0f} {am / b:>7.2f}x {bm:>9.0f} {am / bm:>7.2f}x"
            results.append(row)
            print(f"{batch:>5} {load:>5.2f} {a:>11.0f} {b:>12.0f} {a / b:>9.2f}x {bound:>12.0f} "
                  f"{a / bound:>9.2f}x{mesh_cols} {ma:>9.0f}/{wa:<9.0f} {mb:>10.0f}/{wb:<9.0f} "
                  f"{wa / wb:>13.2f}x")
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            config = dict(hidden=FLAGS.hidden, layers=FLAGS.layers, vocab=FLAGS.vocab,
                          prompt_len=FLAGS.prompt_len, new_tokens=FLAGS.new_tokens,
                          host_devices=n_dev)
            json.dump(dict(load_average_before=load_before, config=config, results=results), f,
                      indent=2)


if __name__ == "__main__":
    app.run(main)
