"""MiniHack Room-Ultimate-5x5 at CPU scale (tiny models from scratch).

The room is dark: a searching player walks it until the stairs come into
view, while one that knows where they lie walks straight there. The turn
cap is 6, where searching often fails and the room's own plan still wins
(docs/FINDINGS.md, "The own plan in three regimes", gives the experts'
success and actions at each cap).

Budget arithmetic (2 cores): observations are ~630 characters (grid,
legend, inventory, actions), ~200 tokens with the fitted vocabulary; an
action is one word. Warm start: 500 expert games, the guided ones following
their room's plan (the informed expert on the straight moves;
crl_jax/training/guided_demos.py), actor 300 SFT steps, extractor 300. RL:
a fixed pool of 16 training rooms apart from the demonstrated ones, 4 rooms
x 8 rollouts of at most 6 turns a step, 20 steps, 5 evaluations on 64
unseen rooms (with and without experience).

RL settings as alfworld_cpu's (tiny_rl), with the extractor's CISPO batch
at 8: MiniHack's entries are short and few are rewarded a step, so a batch
of 32 would rarely fill. SDAE stays off: a room has one subtask. Every room
has the same goal text, so an entry cannot name its room (docs/FINDINGS.md,
"Fig. 6").
"""
from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("minihack_room_cpu", ("MiniHack-Room-Ultimate-5x5-v0",), max_turns=6,
                     obs_chars=700, max_new_tokens=6, train_split="train", eval_split="eval",
                     num_eval_tasks=64, steps=20)
    return tiny_rl(cfg, demos=500, actor_steps=300, eval_every=5, task_pool=16, extractor_batch=8)
