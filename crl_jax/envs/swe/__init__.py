"""Software-engineering tasks: the SWE-bench tool setting.

- sandbox.py: confined shell commands (time limit, output cap, no network,
  writes only inside the episode directory, scrubbed environment);
- tools.py: execute_bash / str_replace_editor / submit and the tool-call parser;
- local_tasks.py (+ repo_templates*.py): generated repositories with one
  planted bug, an issue text, the known fix and FAIL_TO_PASS / PASS_TO_PASS;
- env.py: SWEEnv (registered as "swe_local"); expert.py: SWEExpert;
- swebench_adapter.py: SWE-bench records, patch extraction, predictions and
  the official Docker evaluation.
Nothing is imported here so that ``import crl_jax.envs.swe`` stays cheap.
"""
