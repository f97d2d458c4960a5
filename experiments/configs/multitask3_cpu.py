"""The paper's 3-task mixture (MiniHack Room, WebShop, ALFWorld) at CPU scale.

Each step takes 4 tasks x 4 rollouts from each environment (48 episodes);
the bank is partitioned per environment (multi-task tables).
"""
import dataclasses

from experiments.configs._common import cpu_config


def get_config():
    cfg = cpu_config("multitask3_cpu", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld"),
                     max_turns=20, obs_chars=700, max_new_tokens=24, tasks_per_step=4,
                     list_actions="non_navigation", train_split="generated",
                     eval_split="generated_eval")
    bank = dataclasses.replace(cfg.experience.bank, per_task=True)
    return dataclasses.replace(cfg, experience=dataclasses.replace(cfg.experience, bank=bank))
