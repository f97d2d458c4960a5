"""Do the extractor's inputs and answers fit their limits? On a preset's
expert demonstrations (the warm start's kind of game):

    python experiments/diagnostics/extractor_fit.py --config=alfworld_cpu [--games=300]

- the trajectory a compact consolidation prompt shows, in characters,
  against the clip (prompts.EXTRACTOR_TRAJ_CHARS): for every won game, and
  for the games won within the RL turn cap (the only wins RL can show);
- the answer the warm start teaches for a won game (its plan, as JSON, and
  the stop token), in tokens, against experience.extractor_max_new_tokens:
  an answer cut at the cap is malformed JSON.

Tokens are counted with a tokenizer fitted to these games as the warm start
fits its own (same vocabulary size), not with a cached one.
"""
from __future__ import annotations

import dataclasses
import sys
import tempfile


import numpy as np

from crl_jax.training import config_io
from experiments.configs import PRESETS
from crl_jax.training.config import RunConfig
from experiments.diagnostics.warm_start_probe import PresetCommand


@dataclasses.dataclass(frozen=True)
class Command(PresetCommand):
    """The preset whose demonstrations to measure."""

    games: int = 300
    """Expert demonstrations to play (drawn as the warm start draws its own)."""


def measure(cfg: RunConfig, games: int) -> dict:
    """Trajectory characters and answer tokens of the won demonstrations."""
    from crl_jax.rl import prompts
    from crl_jax.training import warmstart
    from crl_jax.training.components import collect_demos, task_sources
    from crl_jax.training.tasks import DEMO_TURNS_FACTOR, episode_cap

    cap = episode_cap(cfg)
    cfg = dataclasses.replace(cfg, warm_start=dataclasses.replace(cfg.warm_start, demos=games))
    demos = collect_demos(cfg, task_sources(cfg, cfg.env.train_split, None,
                                            cap * DEMO_TURNS_FACTOR))
    wins = [d for d in demos if d.won]
    if not wins:
        raise ValueError(f"the expert won none of the {len(demos)} games: nothing to measure")
    with tempfile.TemporaryDirectory() as tmp:
        tok = warmstart.train_env_tokenizer(demos, cfg.warm_start.vocab_size, tmp,
                                            cfg.rollout.history, cfg.warm_start.split_digits)
        answers = [len(tok.encode(warmstart.extractor_response(warmstart.plan_entry(d)))) + 1
                   for d in wins]

    def shown(d) -> int:  # as the prompt shows it before clipping (whitespace folded)
        text = prompts.trajectory_text(d.actions, d.observations[1:len(d.actions) + 1])
        return len(" ".join(text.split()))
    return {"games": len(demos), "cap": cap, "clip": prompts.EXTRACTOR_TRAJ_CHARS,
            "answer_cap": cfg.experience.extractor_max_new_tokens,
            "chars": [shown(d) for d in wins],
            "chars_within_cap": [shown(d) for d in wins if len(d.actions) <= cap],
            "answer_tokens": answers}


def report(m: dict) -> str:
    def row(name, values, limit):
        v = np.asarray(values)
        if not len(v):
            return f"| {name} | 0 | | | | |"
        return (f"| {name} | {len(v)} | {np.median(v):.0f} | {np.percentile(v, 99):.0f} | "
                f"{v.max()} | {np.mean(v > limit):.3f} |")
    return "\n".join([
        f"{m['games']} expert games, {len(m['chars'])} won:",
        "",
        "| measured | won games | median | p99 | max | share over the limit |",
        "|---|---|---|---|---|---|",
        row(f"trajectory chars (clip {m['clip']})", m["chars"], m["clip"]),
        row(f"trajectory chars, won within {m['cap']} turns", m["chars_within_cap"], m["clip"]),
        row(f"answer tokens (cap {m['answer_cap']})", m["answer_tokens"], m["answer_cap"])])


def main(argv=None) -> int:
    command = config_io.parse_preset_command(Command, sys.argv[1:] if argv is None else argv,
                                             "alfworld_cpu", __doc__, presets=PRESETS)
    if command.games < 1:
        print("error: --games must be >= 1", file=sys.stderr)
        return 2
    if command.cfg.experience.mode == "none":
        print("error: experience.mode=none has no extractor to measure", file=sys.stderr)
        return 2
    print(report(measure(command.cfg, command.games)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
