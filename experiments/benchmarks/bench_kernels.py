"""Benchmark of the loss kernels: time and peak memory of loss + gradient.

    .venv/bin/python experiments/benchmarks/bench_kernels.py --quick [--json out.json] [--dtype bfloat16]
    .venv/bin/python experiments/benchmarks/bench_kernels.py --accelerator [--losses=ppo,cispo]

For each shape (N tokens, hidden d, vocab V) and loss, in one process, each
variant is jax.jit(value_and_grad) w.r.t. (hidden, unembedding) of the
loss: ppo (the actor's PPO-clip, split-GRPO released config, token-mean) or
cispo (the extractor's CISPO, released config):
  naive    full [N, V] logits -> log_softmax -> gather -> loss (plain autodiff)
  chunked  kernels.token_logprobs (chunked, recomputing custom VJP) -> loss
  fused    kernels.fused_policy_loss (one pass: loss and gradients per chunk)
  floor    the bare unembedding matmul forward and backward at the same shape
           (z = h @ W; dh = z @ W^T; dW = h^T @ z): the unavoidable work.
Peak memory is XLA's own account of the compiled executable
(memory_analysis(): arguments + outputs + temporaries - aliased), which works
on CPU, GPU and TPU alike. Time is the fastest of --repeats calls (variants
interleaved) after one warm-up call.
Ratios are printed against naive and floor measured in the same
run (absolute times swing ~2x on shared machines; compare ratios).
"""
from __future__ import annotations

import json
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import app, flags

from kernels import (PolicyLossConfig, fused_policy_loss, naive_token_logprobs,
                     policy_loss, token_logprobs)

FLAGS = flags.FLAGS
flags.DEFINE_bool("quick", False, "two small shapes (one with V=151936): under a minute on 2 cores")
flags.DEFINE_string("json", None, "write all numbers to this JSON file")
flags.DEFINE_enum("dtype", None, ["float32", "bfloat16"],
                  "dtype of hidden and unembedding (default float32, bfloat16 with --accelerator)")
flags.DEFINE_string("shapes", None, "override shapes: 'N,d,V[,chunk];N,d,V[,chunk]'")
flags.DEFINE_integer("repeats", None, "timed calls per variant (default 2 quick, 5 full)")
flags.DEFINE_list("variants", ["naive", "chunked", "fused", "floor"], "variants to run")
flags.DEFINE_bool("accelerator", False, "the paper models' head shapes (d=3584 V=152064, "
                  "d=2560 V=151936; N = 4k, 16k, 32k): GPU or TPU only, skipped on CPU with "
                  "the reason")
flags.DEFINE_list("losses", ["ppo"], "losses to run: ppo (actor), cispo (extractor)")

SEQ_LEN = 16  # tokens per sequence; N must be a multiple
# (N, d, V, chunk_size). Chunks are smaller than on an accelerator: on CPU a
# chunk of a few hundred rows already runs the matmul at full speed.
QUICK_SHAPES = [(2048, 128, 8192, 256), (512, 64, 151936, 128)]
FULL_SHAPES = QUICK_SHAPES + [(4096, 256, 32768, 512), (1024, 256, 151936, 256)]
# The paper models' output heads (Qwen2.5-7B actor, Qwen3-4B extractor) at
# 4k to 32k tokens a micro-batch, in bfloat16 (--accelerator).
ACCELERATOR_SHAPES = [(n, d, v, 1024) for d, v in ((3584, 152064), (2560, 151936))
                      for n in (4096, 16384, 32768)]
# A CPU process would need the naive variant's [N, V] float32 logits several
# times over: tens of GB at these sizes, and hours of matmul.
CPU_LIMIT_LOGITS = 1 << 28
LOSSES = {"ppo": lambda: PolicyLossConfig.split_grpo_released(aggregation="token-mean"),
          "cispo": PolicyLossConfig.cispo_released}


def _parse_shapes(text):
    shapes = []
    for part in text.split(";"):
        fields = [int(x) for x in part.split(",")]
        if len(fields) not in (3, 4) or min(fields) < 1:
            raise ValueError(f"bad shape {part!r}: want N,d,V or N,d,V,chunk with positive ints")
        shapes.append(tuple(fields) if len(fields) == 4 else tuple(fields) + (None,))
    return shapes


def _inputs(n, d, v, dtype, seed=0):
    if n % SEQ_LEN:
        raise ValueError(f"N={n} must be a multiple of {SEQ_LEN}")
    rng = np.random.default_rng(seed)
    b = n // SEQ_LEN
    hidden = jnp.asarray(rng.normal(size=(b, SEQ_LEN, d)), dtype)
    unemb = jnp.asarray(rng.normal(size=(d, v)) / np.sqrt(d), dtype)
    targets = jnp.asarray(rng.integers(0, v, size=(b, SEQ_LEN)), jnp.int32)
    old = jnp.asarray(-np.log(v) + rng.normal(scale=0.3, size=(b, SEQ_LEN)), jnp.float32)
    adv = jnp.asarray(rng.normal(size=(b,)), jnp.float32)
    mask = jnp.asarray(rng.uniform(size=(b, SEQ_LEN)) < 0.9)
    return hidden, unemb, targets, old, adv, mask


def _variant_fn(name, cfg, chunk):
    """A jittable f(hidden, unemb, targets, old, adv, mask) -> (loss_sum, (dh, dW))."""
    def grad_of(loss_fn):
        def run(h, w, t, o, a, m):
            return jax.value_and_grad(lambda h_, w_: loss_fn(h_, w_, t, o, a, m),
                                      argnums=(0, 1))(h, w)
        return run

    if name == "naive":
        return grad_of(lambda h, w, t, o, a, m: policy_loss(
            naive_token_logprobs(h, w, t), o, a, m, cfg).loss_sum)
    if name == "chunked":
        return grad_of(lambda h, w, t, o, a, m: policy_loss(
            token_logprobs(h, w, t, chunk_size=chunk), o, a, m, cfg).loss_sum)
    if name == "fused":
        return grad_of(lambda h, w, t, o, a, m: fused_policy_loss(
            h, w, t, o, a, m, cfg, chunk_size=chunk).loss_sum)
    if name == "floor":
        def floor(h, w, t, o, a, m):
            del t, o, a, m
            flat = h.reshape(-1, h.shape[-1])
            z = jnp.dot(flat, w, preferred_element_type=jnp.float32)
            zc = z.astype(w.dtype)
            d_h = jnp.dot(zc, w.T, preferred_element_type=jnp.float32).astype(h.dtype)
            d_w = jnp.dot(flat.T, zc, preferred_element_type=jnp.float32).astype(w.dtype)
            return 0.5 * jnp.sum(z * z), (d_h.reshape(h.shape), d_w)
        return floor
    raise ValueError(f"unknown variant {name!r}; valid: naive, chunked, fused, floor")


def _peak_bytes(compiled):
    stats = compiled.memory_analysis()
    if stats is None:
        return None, None
    temp = int(stats.temp_size_in_bytes)
    peak = (int(stats.argument_size_in_bytes) + int(stats.output_size_in_bytes) + temp
            - int(stats.alias_size_in_bytes))
    return peak, temp


def measure_all(names, cfg, chunk, args, repeats):
    """Compiles every variant, then times them interleaved (repeat r of each
    variant back to back) so drifting machine load hits all variants alike;
    reports the fastest call (the one least disturbed by other processes)."""
    compiled = {name: jax.jit(_variant_fn(name, cfg, chunk)).lower(*args).compile()
                for name in names}
    results = {}
    for name, fn in compiled.items():
        peak, temp = _peak_bytes(fn)
        loss, _ = jax.block_until_ready(fn(*args))  # warm-up, and the value to cross-check
        results[name] = {"peak_bytes": peak, "temp_bytes": temp, "loss_sum": float(loss),
                         "times_s": []}
    for _ in range(repeats):
        for name, fn in compiled.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            results[name]["times_s"].append(time.perf_counter() - start)
    for res in results.values():
        res["time_s"] = min(res["times_s"])
    return results


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def run_shape(n, d, v, chunk, dtype, repeats, variants, loss="ppo"):
    cfg = LOSSES[loss]()
    args = _inputs(n, d, v, dtype)
    results = measure_all(variants, cfg, chunk, args, repeats)
    flops = 6.0 * n * d * v  # the three matmuls of forward + backward
    for res in results.values():
        res["matmul_gflops_per_s"] = flops / res["time_s"] / 1e9
    row = {"N": n, "d": d, "V": v, "chunk_size": chunk, "dtype": str(np.dtype(dtype)),
           "loss": loss, "variants": results, "ratios": {}}
    for name in ("fused", "chunked"):
        if name not in results:
            continue
        for base in ("naive", "floor"):
            if base in results:
                row["ratios"][f"{name}/{base}"] = {
                    "time": _ratio(results[name]["time_s"], results[base]["time_s"]),
                    "peak_memory": _ratio(results[name]["peak_bytes"], results[base]["peak_bytes"])}
    if "naive" in results and "fused" in results:  # same loss both ways
        row["fused_minus_naive_loss"] = results["fused"]["loss_sum"] - results["naive"]["loss_sum"]
    return row


def _mib(x):
    return "n/a" if x is None else f"{x / 2**20:9.1f}"


def _fmt(x):
    return "  n/a" if x is None else f"{x:5.2f}"


def print_row(row):
    print(f"\n{row['loss']}: N={row['N']} d={row['d']} V={row['V']} chunk={row['chunk_size']} "
          f"{row['dtype']}")
    print(f"  {'variant':8s} {'time ms':>9s} {'peak MiB':>9s} {'temp MiB':>9s} {'GFLOP/s':>8s}")
    for name, res in row["variants"].items():
        print(f"  {name:8s} {res['time_s'] * 1e3:9.1f} {_mib(res['peak_bytes'])} "
              f"{_mib(res['temp_bytes'])} {res['matmul_gflops_per_s']:8.1f}")
    for key, r in row["ratios"].items():
        print(f"  {key:14s} time {_fmt(r['time'])}   peak memory {_fmt(r['peak_memory'])}")
    if "fused_minus_naive_loss" in row:
        print(f"  loss sum: naive {row['variants']['naive']['loss_sum']:.6g}, fused - naive "
              f"{row['fused_minus_naive_loss']:.3g}")


def skipped_on_cpu(n, v) -> str | None:
    """Why a shape does not run on this backend (None: it runs)."""
    if jax.default_backend() != "cpu" or n * v <= CPU_LIMIT_LOGITS:
        return None
    return (f"skipped on CPU: the naive variant's N x V = {n} x {v} float32 logits alone are "
            f"{n * v * 4 / 2**30:.0f} GiB; run it on a GPU or TPU")


def main(argv):
    del argv
    bad = sorted(set(FLAGS.losses) - set(LOSSES))
    if bad:
        raise app.UsageError(f"--losses: unknown {bad}; valid: {', '.join(LOSSES)}")
    dtype_name = FLAGS.dtype or ("bfloat16" if FLAGS.accelerator else "float32")
    dtype = jnp.bfloat16 if dtype_name == "bfloat16" else jnp.float32
    shapes = (_parse_shapes(FLAGS.shapes) if FLAGS.shapes else ACCELERATOR_SHAPES
              if FLAGS.accelerator else QUICK_SHAPES if FLAGS.quick else FULL_SHAPES)
    repeats = FLAGS.repeats or (2 if FLAGS.quick else 5)
    device = jax.devices()[0]
    load_before = os.getloadavg()[0]  # a busy machine's ratios are not a result
    print(f"load average before: {load_before:.2f}")
    print(f"backend={jax.default_backend()} device={device.device_kind} "
          f"devices={jax.device_count()} jax={jax.__version__} repeats={repeats}")
    started = time.perf_counter()
    rows = []
    for loss in FLAGS.losses:
        for n, d, v, chunk in shapes:
            why = skipped_on_cpu(n, v)
            if why:
                print(f"\n{loss}: N={n} d={d} V={v}: {why}")
                continue
            rows.append(run_shape(n, d, v, chunk, dtype, repeats, FLAGS.variants, loss))
            print_row(rows[-1])
    print(f"\ntotal {time.perf_counter() - started:.1f} s")
    if FLAGS.json:
        report = {"load_average_before": load_before, "backend": jax.default_backend(), "device_kind": device.device_kind,
                  "jax": jax.__version__, "machine": platform.machine(),
                  "cpu_count": os.cpu_count(), "repeats": repeats, "shapes": rows}
        with open(FLAGS.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {FLAGS.json}")


if __name__ == "__main__":
    app.run(main)
