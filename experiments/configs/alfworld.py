"""ALFWorld at paper scale: Qwen2.5-7B-Instruct actor, Qwen3-4B-Thinking-2507
extractor, Qwen3-Embedding-0.6B, 16 tasks x 8 rollouts, 40 turns, 2,048 new
tokens a turn, 128 steps, reward +1 / -1, held-out valid_unseen (134 games).
Checkpoints: local directories under $CRL_CHECKPOINTS (see BUILD.md)."""
from experiments.configs._common import paper_config


def get_config():
    return paper_config("alfworld", ("alfworld",), max_turns=40, max_new_tokens=2048, steps=128,
                        tasks_per_step=16, failure_reward=-1.0, train_split="train",
                        eval_split="valid_unseen")
