"""MiniHack Room-Ultimate-5x5 at paper scale: 16 tasks x 8 rollouts, 145 steps;
30 turns of 4,096 tokens in both profiles (released, paper)."""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# PAPER.md "Paper-scale settings" (the paper profile)
PAPER_LIMITS = Limits(max_turns=30, max_new_tokens=4096, max_sequence=32768)


def get_config(profile: str = "released"):
    return paper_config("minihack_room", ("MiniHack-Room-Ultimate-5x5-v0",),
                        paper_limits=PAPER_LIMITS, steps=145, tasks_per_step=16, profile=profile,
                        train_split="train", eval_split="eval")
