"""The paper's 3-task mixture at paper scale: 128 episodes per task a step
(16 tasks x 8 rollouts each of MiniHack Room, WebShop, ALFWorld), 30 turns,
4,096 new tokens a turn, 128 steps."""
from experiments.configs._common import paper_config


def get_config():
    return paper_config("multitask3", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld"),
                        max_turns=30, max_new_tokens=4096, steps=128, tasks_per_step=16,
                        train_split="train", eval_split="valid_unseen")
