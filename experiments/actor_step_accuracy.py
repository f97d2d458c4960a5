"""Greedy next-action accuracy of a preset's warm-started actor on the
expert's states of held-out tasks (see crl_jax/step_accuracy.py):

    python experiments/actor_step_accuracy.py --config=alfworld_cpu [--games=48] [a.b=value ...]

It builds the run as experiments/run.py would (warm start included; set
warm_start.cache_dir to reuse one) and prints a table per expert verb.
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
flags.DEFINE_string("json_out", None, "also write the table as JSON here")
FLAGS = flags.FLAGS


def main(argv):
    from crl_jax.config_tools import apply_overrides, load_preset
    from crl_jax.step_accuracy import expert_views, format_report, step_accuracy
    from crl_jax.trainer import Trainer
    from crl_jax.warmstart import collect_demos
    from models.sampling_ops import strip_stop_tokens

    bad = [a for a in argv[1:] if "=" not in a]
    if bad:
        raise app.UsageError(f"overrides must look like key.sub=value; got {bad}")
    if FLAGS.games < 1:
        raise app.UsageError("--games must be >= 1")
    cfg = apply_overrides(load_preset(FLAGS.config), argv[1:])
    trainer = Trainer(cfg, tempfile.mkdtemp(prefix="step_accuracy_"))
    try:
        r = cfg.rollout
        greedy = dataclasses.replace(trainer.engine.sampling, temperature=0.0)

        def propose(views):
            ids = [trainer.engine.prompt_ids(v) for v in views]
            res = trainer.sampler.generate(ids, greedy, rng=0, decode=trainer.tokenizer.decode)
            return [trainer.tokenizer.decode(strip_stop_tokens(res.tokens[j], greedy))
                    for j in range(len(ids))]

        report = {}
        for src in trainer.eval_sources:  # a mixture gets one table per environment
            demos = collect_demos(src.env_name, src.make, src.tasks[:FLAGS.games],
                                  r.max_turns * 2, src.expert)
            states = expert_views(demos, r.history, r.list_actions, r.show_first_observation)
            stats = step_accuracy(states, propose)
            print(f"{sum(d.won for d in demos)}/{len(demos)} expert games won; "
                  f"{len(states)} states of the {src.env_name} eval split")
            print(format_report(stats))
            report[src.env_name] = {k: v.as_dict() for k, v in stats.items()}
        if FLAGS.json_out:
            with open(FLAGS.json_out, "w") as f:
                json.dump(report, f, indent=2)
    finally:
        if getattr(trainer, "manager", None) is not None:
            trainer.manager.close()


if __name__ == "__main__":
    app.run(main)
