"""Train Complementary RL: ``python experiments/run.py --config=alfworld_cpu [a.b=value ...]``.

Overrides are dotted paths into the preset's RunConfig (for example
``train.steps=2 experience.mode=none``); an unknown key is an error that
lists the valid ones.
"""
from __future__ import annotations

import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # noqa: E402

flags.DEFINE_string("config", "alfworld_cpu", "preset name (a module in experiments/configs/)")
flags.DEFINE_string("out_dir", None, "run directory (default: the preset's train.out_dir)")
flags.DEFINE_bool("resume", False, "continue the run in out_dir from its latest checkpoint")
flags.DEFINE_bool("print_config", False, "print the resolved config and exit")
FLAGS = flags.FLAGS


def main(argv):
    from crl_jax.config_tools import apply_overrides, format_config, load_preset, save_config_json

    overrides = [a for a in argv[1:]]
    bad = [a for a in overrides if "=" not in a]
    if bad:
        raise app.UsageError(f"overrides must look like key.sub=value; got {bad}")
    cfg = apply_overrides(load_preset(FLAGS.config), overrides)
    if FLAGS.print_config:
        print(format_config(cfg))
        return
    out_dir = FLAGS.out_dir or cfg.train.out_dir
    os.makedirs(out_dir, exist_ok=True)
    save_config_json(cfg, os.path.join(out_dir, "config.json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from crl_jax.trainer import Trainer

    trainer = Trainer(cfg, out_dir, resume=FLAGS.resume)
    history = trainer.run(resume=FLAGS.resume)
    final = history[-1] if history else {}
    summary = {k: v for k, v in final.items() if k.startswith(("eval", "train/success"))}
    print(json.dumps(summary, indent=2, sort_keys=True))


if __name__ == "__main__":
    app.run(main)
