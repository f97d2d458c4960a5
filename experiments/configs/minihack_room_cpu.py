"""MiniHack Room-Ultimate-5x5 at CPU scale (tiny models from scratch).

Budget: observations are ~630 characters (grid, legend, inventory, actions),
~200 tokens with the fitted vocabulary; actions are one word. 32 episodes of
at most 30 turns: ~1k turns a step, ~200k prompt tokens forward and the same
in training: ~40-60 s a step on 2 cores; 30 steps ~30 minutes.
"""
from experiments.configs._common import cpu_config


def get_config():
    return cpu_config("minihack_room_cpu", ("MiniHack-Room-Ultimate-5x5-v0",), max_turns=30,
                      obs_chars=700, max_new_tokens=6, train_split="train", eval_split="eval")
