"""WebShop (re-implementation) at paper scale: 8 tasks x 8 rollouts (batch 64),
256 steps."""
from experiments.configs._common import paper_config


def get_config():
    return paper_config("webshop", ("webshop",), max_turns=15, max_new_tokens=2048, steps=256,
                        tasks_per_step=8, train_split="train", eval_split="eval")
