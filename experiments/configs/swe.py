"""SWE tasks at paper scale: Qwen3-4B-Instruct-2507 actor (PAPER.md
"Paper-scale settings"), the three SWE-bench tools, 8 tasks x 8 rollouts.

The paper trains on 124 SWE-Bench Verified tasks inside their Docker
images; those images cannot be fetched here, so this preset runs the same
tool environment on the locally generated repositories (swe_local). Real
SWE-bench evaluation goes through crl_jax/envs/swe/swebench_adapter.py and
the official harness where Docker exists (BUILD.md, "SWE-bench").
"""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# The paper gives SWE-Bench no limits of its own: 40 turns of 4,096 tokens.
PAPER_LIMITS = Limits(max_turns=40, max_new_tokens=4096, max_sequence=32768)


def get_config(profile: str = "released"):
    return paper_config("swe", ("swe_local",), paper_limits=PAPER_LIMITS, steps=128,
                        tasks_per_step=8, actor="Qwen3-4B-Instruct-2507", profile=profile,
                        train_split="train", eval_split="eval", num_eval_tasks=124)
