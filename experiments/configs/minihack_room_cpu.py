"""MiniHack Room-Ultimate-5x5 at CPU scale (tiny models from scratch).

The room is dark: the agent sees only the cells around it, so a searching
player walks the room until the stairs come into view, while one that knows
where they lie walks straight there. Measured on 300 training rooms
(`python experiments/diagnostics/expert_turn_cap.py --config=minihack_room_cpu --caps 4
5 6 8 10`): within 4/5/6/8/10 actions the searching expert wins
0.43/0.49/0.53/0.64/0.74 of them (6.6 actions a win), the informed expert
given the room's own plan (the straight moves to the stairs the search
found) 0.87/0.91/0.92/0.93/0.94 (2.9 actions; a monster or a trap in the way
costs it the rest), with one wrong step 0.63/0.78/0.83/0.86/0.89, with two
0.47/0.58/0.66/0.72/0.77. The turn cap is 6, so knowing the way pays; the
expert demonstrates under a 3x looser cap.

Budget arithmetic (2 cores): observations are ~630 characters (grid, legend,
inventory, actions), ~200 tokens with the fitted vocabulary; actions are one
word. Warm start: 500 expert games, guided ones following their room's plan
(the informed expert on the straight moves; see crl_jax/training/
guided_demos.py), actor 300 SFT steps, extractor 300. RL trains on a fixed
pool of 16 training rooms disjoint from the demonstrated ones: a step plays
4 rooms x 8 rollouts of at most 6 turns; 20 steps and 5 evaluations on 64
unseen rooms (with and without experience).

RL settings as alfworld_cpu (see its docstring): negative advantages scaled
by 0.3, no win credit for rejected actions, lr 5e-4, 2 mini-batches, the
extractor's CISPO batch 8. SDAE stays off: a room has one subtask.
"""
from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("minihack_room_cpu", ("MiniHack-Room-Ultimate-5x5-v0",), max_turns=6,
                     obs_chars=700, max_new_tokens=6, train_split="train", eval_split="eval",
                     num_eval_tasks=64, steps=20)
    return tiny_rl(cfg, demos=500, actor_steps=300, eval_every=5, task_pool=16, extractor_batch=8)
