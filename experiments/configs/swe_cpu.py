"""Software-engineering tasks at CPU scale: small generated Python
repositories with one planted bug each (crl_jax/envs/swe/local_tasks.py),
the three SWE-bench tools (execute_bash, str_replace_editor, submit) in a
sandbox, tiny actor and extractor trained from scratch.

Budget arithmetic (2 cores): an action is a whole tool call (~30-100 tokens)
and a prompt carries the issue and the file listing (~500-700 tokens), so a
step is 2 tasks x 8 rollouts of at most 8 turns, for 10 steps; every tool
call runs a sandboxed process (~0.05-0.2 s). The warm start imitates 64
expert episodes (run the failing test, view the file, str_replace the fix,
rerun, submit) for 120 SFT steps (~3.7 s a step).

The tiny actor can only learn the bug sites it has seen: the generator's
templates repeat across seeds, so held-out seeds test recall of fixes, not
software engineering. That is the point of a CPU demo (no figure is drawn
from it: docs/FINDINGS.md, "WebShop alone and SWE-Bench: not run"); the
`swe` preset is the real setting.
"""
from crl_jax.training.config import WarmStartSpec
from experiments.configs._common import WARM_CACHE, cpu_config


def get_config():
    return cpu_config("swe_cpu", ("swe_local",), max_turns=8, obs_chars=1600,
                      max_new_tokens=128, max_prompt_tokens=1536, steps=10, tasks_per_step=2,
                      show_first_observation=True, train_split="train", eval_split="eval",
                      num_eval_tasks=16,
                      warm_start=WarmStartSpec(demos=64, actor_steps=120, actor_lr=3e-3,
                                               extractor_steps=40, extractor_lr=3e-3, batch=16,
                                               vocab_size=1024, cache_dir=WARM_CACHE))
