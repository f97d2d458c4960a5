"""The paper's 6-task mixture: the 3-task mixture plus MazeWalk-9x9,
KeyRoom-Dark-S5 and Sokoban (6x6, 2 boxes)."""
from experiments.configs._common import paper_config


def get_config():
    return paper_config("multitask6", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld",
                                       "MiniHack-MazeWalk-9x9-v0", "MiniHack-KeyRoom-Dark-S5-v0",
                                       "sokoban"),
                        max_turns=30, max_new_tokens=4096, steps=128, tasks_per_step=16,
                        train_split="train", eval_split="valid_unseen")
