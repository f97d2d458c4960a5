"""MiniHack Room-Ultimate-5x5 at CPU scale (tiny models from scratch).

Budget arithmetic (2 cores): observations are ~630 characters (grid, legend,
inventory, actions), ~200 tokens with the fitted vocabulary; actions are one
word. Warm start: 500 expert games (seconds: the expert walks to the stairs),
actor 300 SFT steps (~4 minutes; its loss falls from 0.73 to 0.36 between
steps 200 and 300, and at 600 steps the warm actor already wins 70% of its
training rooms, leaving RL little to show), extractor 300 (~4 minutes; at 60
steps it copied the goal but only 8% of entries were exact). RL trains on a
fixed pool of 16 training seeds (train.task_pool, as alfworld_cpu): a step
plays 8 tasks x 4 rollouts of at most 30 turns, ~15 s with its update; 20
steps and 5 evaluations on 64 unseen seeds (with and without experience).

The extractor's CISPO buffer trains once it holds 8 rewarded outputs
(alfworld_cpu: 32): with 32 it held 29 by step 20 (seed 0), so the extractor
never trained in RL.

RL settings as alfworld_cpu (see its docstring): negative advantages scaled
by 0.3, no win credit for rejected actions, lr 5e-4, 2 mini-batches. SDAE
stays off: a room has one subtask (reach the stairs).
"""
from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("minihack_room_cpu", ("MiniHack-Room-Ultimate-5x5-v0",), max_turns=30,
                     obs_chars=700, max_new_tokens=6, train_split="train", eval_split="eval",
                     num_eval_tasks=64, steps=20)
    return tiny_rl(cfg, demos=500, actor_steps=300, eval_every=5, task_pool=16, extractor_batch=8)
