"""What the warm-start diagnostics share (actor_step_accuracy.py,
extractor_quality.py): their command line (a preset, its keys as
--section.key=value, and the probe's own options), the run built as
experiments/run.py would build it (warm start included: the preset's
warm_start.cache_dir is reused when it holds one), its shutdown, and the
JSON report."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
from typing import Annotated, Callable

import tyro

from crl_jax.training import config_io
from experiments.configs import PRESETS
from crl_jax.training.config import RunConfig


@dataclasses.dataclass(frozen=True)
class PresetCommand:
    """A script's preset; every key of its configuration can be changed as for
    experiments/run.py (config_io.parse_preset_command). Scripts add their
    own options in a subclass."""

    cfg: Annotated[RunConfig, tyro.conf.arg(name=""), tyro.conf.FlagConversionOff]
    config: str = "alfworld_cpu"
    """The preset: a module of experiments/configs/."""


@dataclasses.dataclass(frozen=True)
class ProbeCommand(PresetCommand):
    """The preset to probe and the probe's options."""

    games: int = 48
    """Held-out tasks the expert plays (per environment)."""
    json_out: str | None = None
    """Also write the report as JSON here."""
    max_new_tokens: int = 96
    """Length cap of an extractor answer (extractor_quality.py)."""
    temperature: float = 0.0
    """Sampling temperature of the extractor's answers (extractor_quality.py;
    0: greedy; RL samples at experience.extractor_temperature)."""
    samples: int = 1
    """Answers per trajectory (extractor_quality.py; more than 1 with a temperature)."""
    missteps: int = 0
    """Rejected actions put into each held-out trajectory, as an actor's
    trajectory shows them (extractor_quality.py; 0: the expert's as played)."""
    exp: str = "none"
    """The experience line in every prompt (actor_step_accuracy.py): none, own,
    peer or noisy:K."""


def parse(description: str, argv=None) -> ProbeCommand:
    command = config_io.parse_preset_command(ProbeCommand, sys.argv[1:] if argv is None else argv,
                                             "alfworld_cpu", description, presets=PRESETS)
    if command.games < 1 or command.missteps < 0 or command.samples < 1 or command.temperature < 0:
        print("error: --games and --samples must be >= 1, --missteps and --temperature >= 0",
              file=sys.stderr)
        raise SystemExit(2)
    return command


@contextlib.contextmanager
def built_run(cfg: RunConfig, prefix: str, check: Callable[[RunConfig], str | None] | None = None):
    """Yields the built run (crl_jax.training.components.Run); ``check(cfg)``
    may return an error message for settings the probe cannot use."""
    from crl_jax.training.components import build_run

    problem = check(cfg) if check is not None else None
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    run = build_run(cfg, tempfile.mkdtemp(prefix=prefix))
    try:
        yield run
    finally:
        run.close()


def write_report(report: dict, json_out: str | None) -> None:
    if json_out:
        with open(json_out, "w") as f:
            json.dump(report, f, indent=2)


def extractor_answers(run, sampling) -> Callable[[list[str]], list[str]]:
    """The run's extractor answering rendered prompts with ``sampling``, 16
    at a time (each batch its own sampling seed), for
    crl_jax.diagnostics.entry_quality.entry_quality."""
    from models.sampling_ops import strip_stop_tokens

    tok, sampler = run.ext_tokenizer, run.agent.sampler

    def answer(texts: list[str]) -> list[str]:
        out = []
        for i in range(0, len(texts), 16):
            res = sampler.generate([tok.encode(t) for t in texts[i:i + 16]], sampling, rng=i)
            out += [tok.decode(strip_stop_tokens(t, sampling)) for t in res.tokens]
        return out
    return answer
