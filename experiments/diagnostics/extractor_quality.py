"""Entries the preset's warm-started extractor writes for held-out expert
trajectories, against the entries it was taught to write (see
crl_jax/diagnostics/entry_quality.py):

    python experiments/diagnostics/extractor_quality.py --config=alfworld_cpu [--games=48] [--missteps=2] [--section.key=value ...]

It builds the run as experiments/run.py would (warm start included; the
preset's warm_start.cache_dir is reused) and prints one line per environment.
"""
from __future__ import annotations

import dataclasses
import sys


from experiments.diagnostics.warm_start_probe import (built_run, extractor_answers, parse,
                                          write_report)


def _needs_extractor(cfg) -> str | None:
    return "experience.mode=none builds no extractor" if cfg.experience.mode == "none" else None


def main(argv=None) -> int:
    command = parse(__doc__, argv)
    from crl_jax.diagnostics.entry_quality import entry_quality
    from crl_jax.training.warmstart import collect_demos

    with built_run(command.cfg, "extractor_quality_", _needs_extractor) as run:
        sampling = dataclasses.replace(run.agent.sampling, temperature=command.temperature,
                                       max_new_tokens=command.max_new_tokens)
        answer = extractor_answers(run, sampling)

        report = {}
        for src in run.eval_sources:
            demos = collect_demos(src.env_name, src.make, src.tasks[:command.games],
                                  run.cfg.rollout.max_turns * 2, src.expert)
            scores = entry_quality(demos * command.samples, answer, command.missteps).as_dict()
            report[src.env_name] = scores
            noise = f" with {command.missteps} rejected actions each" if command.missteps else ""
            how = f"sampled at {command.temperature}" if command.temperature else "greedy"
            print(f"{src.env_name}: {scores['games']} answers ({how}) to won expert games{noise}; "
                  f"an add operation {scores['parsed']:.3f}, exact entry {scores['exact']:.3f}, "
                  f"goal copied {scores['goal']:.3f}, plan-step F1 {scores['step_f1']:.3f}, "
                  f"malformed {scores['malformed']:.3f} {scores['rejected']}")
        write_report(report, command.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
