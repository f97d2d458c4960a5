"""The paper's 3-task mixture at paper scale: 128 episodes per task a step
(16 tasks x 8 rollouts each of MiniHack Room, WebShop, ALFWorld), 30 turns of
4,096 tokens, 128 steps; profiles released and paper."""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# PAPER.md "Paper-scale settings" (the paper profile)
PAPER_LIMITS = Limits(max_turns=30, max_new_tokens=4096, max_sequence=32768)


def get_config(profile: str = "released"):
    return paper_config("multitask3", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld"),
                        paper_limits=PAPER_LIMITS, steps=128, tasks_per_step=16,
                        profile=profile, train_split="train", eval_split="valid_unseen")
