"""Greedy next-action accuracy of a preset's warm-started actor on the
expert's states of held-out tasks (see crl_jax/diagnostics/step_accuracy.py):

    python experiments/actor_step_accuracy.py --config=alfworld_cpu [--games=48] [--section.key=value ...]

It builds the run as experiments/run.py would (warm start included; the
preset's warm_start.cache_dir is reused) and prints a table per expert verb.
"""
from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments.warm_start_probe import built_run, parse, write_report  # noqa: E402


def main(argv=None) -> int:
    command = parse(__doc__, argv)
    from crl_jax.rl import prompts
    from crl_jax.diagnostics.step_accuracy import env_verdict, expert_views, format_report, step_accuracy
    from crl_jax.training.warmstart import collect_demos
    from models.sampling_ops import strip_stop_tokens

    with built_run(command.cfg, "step_accuracy_") as run:
        r = run.cfg.rollout
        greedy = dataclasses.replace(run.engine.sampling, temperature=0.0)

        def propose(views):
            ids = [run.engine.prompt_ids(v) for v in views]
            res = run.sampler.generate(ids, greedy, rng=0, decode=run.tokenizer.decode)
            # the action a rollout would take from each answer (None: none in it)
            return [prompts.parse_action(run.tokenizer.decode(
                strip_stop_tokens(res.tokens[j], greedy)), r.format) for j in range(len(ids))]

        report = {}
        for src in run.eval_sources:  # a mixture gets one table per environment
            demos = collect_demos(src.env_name, src.make, src.tasks[:command.games],
                                  r.max_turns * 2, src.expert)
            states = expert_views(demos, r.history, r.list_actions, r.show_first_observation)
            stats = step_accuracy(states, propose, accepts=env_verdict(src.make))
            print(f"{sum(d.won for d in demos)}/{len(demos)} expert games won; "
                  f"{len(states)} states of the {src.env_name} eval split")
            print(format_report(stats))
            report[src.env_name] = {k: v.as_dict() for k, v in stats.items()}
        write_report(report, command.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
