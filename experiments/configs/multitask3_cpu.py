"""The paper's 3-task mixture (MiniHack Room, WebShop, ALFWorld) at CPU scale.

One tiny actor and one tiny extractor for all three environments, with the
settings each single-environment preset was calibrated to where they do not
conflict: ALFWorld's small generated rooms with the lenient action parser
(env.* settings only ALFWorld reads), the room's first description in the
prompt (ALFWorld needs it to know where things are; 640 prompt tokens leave
room for a MiniHack map in it), and alfworld_cpu's RL settings (negative
advantages scaled by 0.3, no win credit for rejected actions, lr 5e-4, 2
mini-batches, SDAE off: MiniHack and WebShop emit no subtask events). RL
draws from a fixed pool of 8 tasks per environment, disjoint from the warm
start's games: at 2 a step each comes back about every 4 steps.

Warm start: 1,500 expert games (500 per environment), actor 1,200 SFT steps
(alfworld_cpu's count: ALFWorld is the hardest of the three to imitate),
extractor 300. The extractor trains on batches of 16 rewarded outputs, between
alfworld_cpu's 32 and minihack_room_cpu's 8. A step plays 2 tasks x 8
rollouts from each environment (48 episodes, at most 20 turns; split-GRPO
subgroups of 4, as in the single-environment presets); 20 steps,
evaluations every 10 on 32 unseen tasks per environment (with and without
experience). The bank is partitioned per environment (multi-task tables).
What its runs show: docs/FINDINGS.md, "Table 1" and "Fig. 9d".
"""
import dataclasses

from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("multitask3_cpu", ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld"),
                     max_turns=20, obs_chars=700, max_new_tokens=24, tasks_per_step=2,
                     list_actions="non_navigation", show_first_observation=True,
                     max_prompt_tokens=640, train_split="generated", eval_split="generated_eval",
                     num_generated=1000, num_eval_tasks=32, lenient_actions=True,
                     room_size="small", steps=20)
    cfg = tiny_rl(cfg, demos=1500, actor_steps=1200, eval_every=10, task_pool=8,
                  extractor_batch=16)
    bank = dataclasses.replace(cfg.experience.bank, per_task=True)
    return dataclasses.replace(cfg, experience=dataclasses.replace(cfg.experience, bank=bank))
