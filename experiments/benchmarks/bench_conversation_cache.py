"""Multi-turn rollouts: continuing each conversation's KV cache against
prefilling the whole conversation again every turn.

    python experiments/benchmarks/bench_conversation_cache.py [--turns=10,30] [--rows=8]
        [--repeats=2] [--json=docs/benchmarks/conversation_cache.json]

The workload is the paper presets' rollout at CPU size: ALFWorld games in
the released chat format (rollout.prompt_style=released, one growing
conversation per episode), played by the CPU presets' actor shape with
random weights. Two things a trained actor would bring are put in by hand,
the same for both modes: answers of varying length (sampling stops on a
random set of tokens as well as on the end of turn, about one answer token
in ``--mean_answer``) and actions (a random model writes no well-formed
answer; each answer's hash picks an ALFWorld action, so the games step and
reply with their real observations). Rows leave when their conversation
meets ``--max_prompt_tokens``.

For each turn count both modes play the same rollout (same seed) in this
process: a first call that compiles, then ``--repeats`` timed calls each,
alternating. Printed per mode: tokens prefilled, tokens sampled, the
cache's real tokens / written slots (averaged over turns), the median wall
time of a rollout and sampled tokens per second; then the ratios. The load
average is printed before and after: on a busy machine the ratio is not a
result.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import tempfile
import time
import zlib

from absl import app, flags


def define_flags() -> None:
    """The command line (defined when run, so that importing this module for
    its workload defines no global flag beside another benchmark's)."""
    flags.DEFINE_list("turns", ["10", "30"], "turn caps to measure (rollout.max_turns)")
    flags.DEFINE_integer("rows", 8, "episodes played in one batch")
    flags.DEFINE_integer("max_new_tokens", 48, "tokens an answer may take (rollout.max_new_tokens)")
    flags.DEFINE_integer("mean_answer", 24, "about one sampled token in this many ends the answer")
    flags.DEFINE_integer("max_prompt_tokens", 2048, "the conversation limit (rollout.max_prompt_tokens)")
    flags.DEFINE_integer("hidden", 128, "model width (the CPU presets' actor)")
    flags.DEFINE_integer("layers", 2, "decoder layers")
    flags.DEFINE_integer("repeats", 2, "timed rollouts per mode (the median is reported)")
    flags.DEFINE_string("json", None, "write the results as JSON to this path")


FLAGS = flags.FLAGS

ACTIONS = ("look", "inventory", "go to cabinet 1", "go to countertop 1", "open cabinet 1",
           "go to fridge 1", "open fridge 1", "examine countertop 1", "go to drawer 2")


def read_action(text, fmt, style, env_name, valid_actions=()):
    """The benchmark's stand-in for a trained actor's answer: an action
    picked by the text's hash (never a search-and-ask call)."""
    return None, ACTIONS[zlib.crc32(text.encode()) % len(ACTIONS)]


@contextlib.contextmanager
def actions_read_by_hash():
    from crl_jax.rl import prompts
    real = prompts.parse_turn
    prompts.parse_turn = read_action
    try:
        yield
    finally:
        prompts.parse_turn = real


def build(rows: int, hidden: int, layers: int, tmp: str):
    """The tokenizer (fitted on the released prompts), the random actor and
    the games of one rollout."""
    from crl_jax.envs.registry import make_env
    from crl_jax.rl import released_prompts as rp
    from models.config import tiny_config
    from models.decoder import init_decoder
    from models.tokenizer import load_tokenizer
    from models.tokenizer_training import train_lossless_tokenizer

    env = make_env("alfworld", split="generated", num_generated=rows, seed=0)
    texts = [rp.ALFWORLD_SYSTEM, rp.tool_instructions(2)]
    for task in range(rows):
        obs, _ = env.reset(task)
        texts += [obs] + [env.step(a).observation for a in ACTIONS]
    tok = load_tokenizer(train_lossless_tokenizer(texts * 4, 1024, tmp, kind="bpe"))
    cfg = tiny_config("qwen3", vocab_size=tok.vocab_size, hidden_size=hidden,
                      intermediate_size=3 * hidden, num_layers=layers, num_heads=4,
                      num_kv_heads=2, head_dim=hidden // 4)
    envs = [make_env("alfworld", split="generated", num_generated=rows, seed=0)
            for _ in range(rows)]
    return tok, init_decoder(cfg, seed=0), envs


def make_engine(model, tok, turns: int, continued: bool, max_new_tokens: int,
                max_prompt_tokens: int, mean_answer: int):
    import numpy as np

    from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
    from models.sampler import Sampler

    cfg = RolloutConfig(format="chat", prompt_style="released", conversation=True,
                        continue_cache=continued, max_turns=turns,
                        max_new_tokens=max_new_tokens, max_prompt_tokens=max_prompt_tokens,
                        temperature=1.0)
    engine = RolloutEngine(Sampler(model), tok, cfg)
    # Varying answer lengths: a fixed random set of tokens also ends an answer.
    stops = np.random.default_rng(0).choice(tok.vocab_size, tok.vocab_size // mean_answer,
                                            replace=False)
    engine.sampling = dataclasses.replace(engine.sampling, stop_token_ids=tuple(sorted(
        set(engine.sampling.stop_token_ids) | {int(t) for t in stops})))
    return engine


def play(engine, envs) -> tuple[float, dict, list]:
    start = time.perf_counter()
    episodes = engine.play(envs, list(range(len(envs))), [False] * len(envs), seed=0)
    return time.perf_counter() - start, dict(engine.sampling_stats), episodes


def measure(model, tok, envs, turns: int, repeats: int, **workload) -> dict:
    """Both modes on one turn cap (``workload``: make_engine's sizes): their
    numbers and ratios."""
    engines = {name: make_engine(model, tok, turns, name == "continued", **workload)
               for name in ("re-encoded", "continued")}
    out = {}
    for name, engine in engines.items():
        seconds, stats, episodes = play(engine, envs)  # compiles
        out[name] = dict(first_call_s=seconds, stats=stats, episodes=episodes, seconds=[])
    for _ in range(repeats):
        for name, engine in engines.items():
            out[name]["seconds"].append(play(engine, envs)[0])
    re, co = out["re-encoded"], out["continued"]
    episodes = co.pop("episodes")
    same = sum([t.action_ids for t in a.turns] == [t.action_ids for t in b.turns]
               for a, b in zip(re.pop("episodes"), episodes))
    turns_played = [len(ep.turns) for ep in episodes]
    answers = [len(t.action_ids) for ep in episodes for t in ep.turns]
    result = dict(turns=turns, rows=len(envs), same_tokens=f"{same}/{len(envs)}",
                  turns_played=[min(turns_played), max(turns_played)],
                  answer_tokens=[min(answers), statistics.mean(answers), max(answers)])
    for name, m in out.items():
        s = m["stats"]
        median = statistics.median(m["seconds"])
        result[name] = dict(prefilled=s["prefilled"], sampled=s["tokens"],
                            slot_use=s["cache_tokens"] / max(1, s["cache_slots"]),
                            max_slots=s["max_slots"],
                            seconds=median, first_call_s=m["first_call_s"],
                            tokens_per_s=s["tokens"] / median)
    result["prefill_ratio"] = re["stats"]["prefilled"] / max(1, co["stats"]["prefilled"])
    result["speedup"] = result["re-encoded"]["seconds"] / result["continued"]["seconds"]
    return result


def report_lines(r: dict) -> list[str]:
    lines = [f"{r['turns']} turns, {r['rows']} rows (turns played {r['turns_played'][0]}-"
             f"{r['turns_played'][1]}; answers {r['answer_tokens'][0]}-{r['answer_tokens'][2]} "
             f"tokens, mean {r['answer_tokens'][1]:.1f}; same tokens in both modes: "
             f"{r['same_tokens']} episodes)"]
    for name in ("re-encoded", "continued"):
        m = r[name]
        lines.append(f"  {name:<11} prefilled {m['prefilled']:>8}  sampled {m['sampled']:>6}  "
                     f"real tokens / slots {m['slot_use']:.2f}  rollout {m['seconds']:6.2f} s "
                     f"(first call {m['first_call_s']:.1f} s)  {m['tokens_per_s']:7.0f} tok/s")
    lines.append(f"  re-encoded / continued: prefill {r['prefill_ratio']:.1f}x, "
                 f"wall time {r['speedup']:.2f}x")
    return lines


def main(_):
    import jax

    load_before = os.getloadavg()[0]
    print(f"load average before: {load_before:.2f}" + (
        " (above 1: the machine is busy, the ratios are not a result)" if load_before > 1 else ""))
    results = []
    with tempfile.TemporaryDirectory() as tmp, actions_read_by_hash():
        tok, model, envs = build(FLAGS.rows, FLAGS.hidden, FLAGS.layers, tmp)
        for turns in (int(t) for t in FLAGS.turns):
            results.append(measure(model, tok, envs, turns, FLAGS.repeats,
                                   max_new_tokens=FLAGS.max_new_tokens,
                                   max_prompt_tokens=FLAGS.max_prompt_tokens,
                                   mean_answer=FLAGS.mean_answer))
            print("\n".join(report_lines(results[-1])), flush=True)
    load_after = os.getloadavg()[0]
    print(f"load average after: {load_after:.2f}")
    if FLAGS.json:
        config = {k: FLAGS[k].value for k in ("rows", "max_new_tokens", "mean_answer",
                                              "max_prompt_tokens", "hidden", "layers", "repeats")}
        with open(FLAGS.json, "w") as f:
            json.dump(dict(load_average_before=load_before, load_average_after=load_after,
                           cpu_count=os.cpu_count(), jax=jax.__version__,
                           backend=jax.default_backend(), config=config, results=results),
                      f, indent=1)


if __name__ == "__main__":
    define_flags()
    app.run(main)
