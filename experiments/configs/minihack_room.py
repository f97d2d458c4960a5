"""MiniHack Room-Ultimate-5x5 at paper scale: 16 tasks x 8 rollouts, 30 turns,
4,096 new tokens a turn, 145 steps."""
from experiments.configs._common import paper_config


def get_config():
    return paper_config("minihack_room", ("MiniHack-Room-Ultimate-5x5-v0",), max_turns=30,
                        max_new_tokens=4096, steps=145, tasks_per_step=16, train_split="train",
                        eval_split="eval")
