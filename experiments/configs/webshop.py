"""WebShop (re-implementation) at paper scale: 8 tasks x 8 rollouts (batch 64),
256 steps; profiles released and paper (the paper gives no turn or token limits
for WebShop: the paper profile keeps 15 turns of 2,048 tokens)."""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# PAPER.md "Paper-scale settings" (the paper profile)
PAPER_LIMITS = Limits(max_turns=15, max_new_tokens=2048, max_sequence=16384)


def get_config(profile: str = "released"):
    return paper_config("webshop", ("webshop",), paper_limits=PAPER_LIMITS, steps=256,
                        tasks_per_step=8, profile=profile, train_split="train", eval_split="eval")
