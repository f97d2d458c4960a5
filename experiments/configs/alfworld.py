"""ALFWorld at paper scale: Qwen2.5-7B-Instruct actor, Qwen3-4B-Thinking-2507
extractor, Qwen3-Embedding-0.6B, 16 tasks x 8 rollouts, 128 steps, reward
+1 / -1, held-out valid_unseen (134 games). Profiles: released (the default:
the authors' code, 30 turns of 4,096 tokens) and paper (--config=alfworld:paper:
the paper's text, 40 turns of 2,048 tokens in 16,384); see _common.paper_config.
Checkpoints: local directories under $CRL_CHECKPOINTS (see BUILD.md)."""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# PAPER.md "Paper-scale settings" (the paper profile)
PAPER_LIMITS = Limits(max_turns=40, max_new_tokens=2048, max_sequence=16384)


def get_config(profile: str = "released"):
    return paper_config("alfworld", ("alfworld",), paper_limits=PAPER_LIMITS, steps=128,
                        tasks_per_step=16, failure_reward=-1.0, profile=profile,
                        train_split="train", eval_split="valid_unseen")
