"""Build a preset's warm start into the warm-start cache, ahead of its runs.

    python experiments/warm_start.py --config=alfworld_cpu [--section.key=value ...]

It collects the expert demonstrations, trains the environment tokenizer and
the tiny models' supervised warm start exactly as experiments/run.py would,
and stores them under warm_start.cache_dir (default runs/warm_start_cache),
keyed by everything that shapes them (crl_jax.training.warm_cache.
WarmStartInputs). A run of the same preset, and every run whose settings
share that key (other seeds, RL settings or experience modes), then loads
them instead of training. An entry already in the cache is reported, not
rebuilt; it names its actor's inputs (warm_actors.py), so runs that teach
the extractor otherwise find that actor. Paper-scale presets start from
checkpoints and have no warm start.
"""
from __future__ import annotations

import dataclasses
import sys
import tempfile
from typing import Annotated


import tyro

from crl_jax.training import config_io
from experiments.configs import PRESETS
from crl_jax.training.config import RunConfig

DEFAULT_PRESET = "alfworld_cpu"


@dataclasses.dataclass(frozen=True)
class Command:
    """Which warm start to build: a preset (above) and changes to its keys."""

    cfg: Annotated[RunConfig, tyro.conf.arg(name=""), tyro.conf.FlagConversionOff]
    config: str = DEFAULT_PRESET
    """The preset: a module of experiments/configs/."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = config_io.parse_preset_command(Command, argv, DEFAULT_PRESET, __doc__, presets=PRESETS)
    cfg = command.cfg
    if cfg.actor.checkpoint:
        print(f"error: preset {command.config} starts from checkpoints: it has no warm start",
              file=sys.stderr)
        return 2
    if not cfg.warm_start.cache_dir:
        print("error: warm_start.cache_dir is empty: name the cache to build into", file=sys.stderr)
        return 2
    from crl_jax.training.components import build_run
    from crl_jax.training.logs import setup_logging
    from crl_jax.training.warm_cache import WarmStartCache, warm_start_key

    cache = WarmStartCache(cfg.warm_start.cache_dir, warm_start_key(cfg))
    needed = ["actor"] + (["extractor"] if cfg.experience.mode != "none" else [])
    if all(cache.has(n) for n in needed):
        from crl_jax.training.warm_actors import actor_inputs_key, mark_actor
        mark_actor(cache, actor_inputs_key(cfg))  # an entry made before it named them
        print(f"already cached: {cache.path}")
        return 0
    with tempfile.TemporaryDirectory(prefix="warm_start_") as scratch:
        setup_logging(scratch)
        build_run(cfg, scratch).close()
    print(f"warm start cached: {cache.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
