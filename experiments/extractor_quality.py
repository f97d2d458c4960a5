"""Entries the preset's warm-started extractor writes for held-out expert
trajectories, against the entries it was taught to write (see
crl_jax/entry_quality.py):

    python experiments/extractor_quality.py --config=alfworld_cpu [--games=48] [a.b=value ...]

It builds the run as experiments/run.py would (warm start included; set
warm_start.cache_dir to reuse one) and prints one line per environment.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # noqa: E402

flags.DEFINE_string("config", "alfworld_cpu", "preset name (a module in experiments/configs/)")
flags.DEFINE_integer("games", 48, "held-out tasks the expert plays (per environment)")
flags.DEFINE_integer("max_new_tokens", 96, "length cap of an answer")
flags.DEFINE_string("json_out", None, "also write the scores as JSON here")
FLAGS = flags.FLAGS


def main(argv):
    from crl_jax.config_tools import apply_overrides, load_preset
    from crl_jax.entry_quality import entry_quality
    from crl_jax.trainer import Trainer
    from crl_jax.warmstart import collect_demos
    from models.sampling_ops import strip_stop_tokens

    bad = [a for a in argv[1:] if "=" not in a]
    if bad:
        raise app.UsageError(f"overrides must look like key.sub=value; got {bad}")
    if FLAGS.games < 1:
        raise app.UsageError("--games must be >= 1")
    cfg = apply_overrides(load_preset(FLAGS.config), argv[1:])
    if cfg.experience.mode == "none":
        raise app.UsageError("experience.mode=none builds no extractor")
    trainer = Trainer(cfg, tempfile.mkdtemp(prefix="extractor_quality_"))
    try:
        tok, sampler = trainer.ext_tokenizer, trainer.agent.sampler
        greedy = dataclasses.replace(trainer.agent.sampling, temperature=0.0,
                                     max_new_tokens=FLAGS.max_new_tokens)

        def answer(texts):
            out = []
            for i in range(0, len(texts), 16):
                res = sampler.generate([tok.encode(t) for t in texts[i:i + 16]], greedy, rng=0)
                out += [tok.decode(strip_stop_tokens(t, greedy)) for t in res.tokens]
            return out

        report = {}
        for src in trainer.eval_sources:
            demos = collect_demos(src.env_name, src.make, src.tasks[:FLAGS.games],
                                  cfg.rollout.max_turns * 2, src.expert)
            scores = entry_quality(demos, answer).as_dict()
            report[src.env_name] = scores
            print(f"{src.env_name}: {scores['games']} won expert games; an add operation "
                  f"{scores['parsed']:.3f}, exact entry {scores['exact']:.3f}, goal copied "
                  f"{scores['goal']:.3f}, plan-step F1 {scores['step_f1']:.3f}")
        if FLAGS.json_out:
            with open(FLAGS.json_out, "w") as f:
                json.dump(report, f, indent=2)
    finally:
        if trainer.manager is not None:
            trainer.manager.close()


if __name__ == "__main__":
    app.run(main)
