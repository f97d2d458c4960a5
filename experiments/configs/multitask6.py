"""The paper's 6-task mixture: the 3-task mixture plus MazeWalk-9x9,
KeyRoom-Dark-S5 and Sokoban (6x6, 2 boxes); profiles released and paper."""
from experiments.configs._common import PROFILES, Limits, paper_config  # noqa: F401  (PROFILES: NAME:PROFILE)

# PAPER.md "Paper-scale settings" (the paper profile)
PAPER_LIMITS = Limits(max_turns=30, max_new_tokens=4096, max_sequence=32768)


def get_config(profile: str = "released"):
    return paper_config("multitask6", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld",
                                       "MiniHack-MazeWalk-9x9-v0", "MiniHack-KeyRoom-Dark-S5-v0",
                                       "sokoban"),
                        paper_limits=PAPER_LIMITS, steps=128, tasks_per_step=16,
                        profile=profile, train_split="train", eval_split="valid_unseen")
