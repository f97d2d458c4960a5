"""ALFWorld at CPU scale: tiny actor and extractor trained from scratch on
procedurally generated games (no downloaded data or checkpoints needed).

Budget arithmetic (2 cores): the actor is a d=128, 2-layer decoder over a
1,024-token vocabulary fitted to the game text. Games are small rooms
(env.room_size=small: ~8 receptacles, the expert needs 5.5-11 actions on
average per task type), all six task types. A compact prompt (goal, the
room's first description, two history lines, the observation and the
non-navigation actions) is ~200 tokens and an action ~6 tokens. Warm start:
1,000 expert games, actor 1,200 SFT steps (~12 minutes), extractor 300
(~4 minutes; at 60 it wrote plans of other tasks). RL trains on a fixed pool
of 16 of those games (train.task_pool): at 8 tasks a step each game comes
back every other step, as the paper's ALFWorld runs revisit their tasks; on
the whole pool each game is met about once and RL stays flat. A step plays
8 tasks x 4 rollouts = 32 episodes of at most 20 turns and makes 2 PPO
mini-batch updates; 20 steps and 5 evaluations on 64 unseen games (with and
without experience). Measured alone on 2 cores: 23m06s wall (warm start
15.6 min), peak RSS 3.4 GB.

RL settings for a tiny actor with few wins (see README, "Trainer"): episode-
balanced turn weights, negative advantages scaled by 0.3 (weighted
REINFORCE), no share of a win's credit for turns whose action was rejected
(without it a win reinforces its rejected actions and their rate creeps up
from 0.47 to 0.62 in 20 steps), subtask-decomposed advantages (SDAE) for
partial credit, lr 5e-4.

Actions go through the agent-side lenient parser (case, spacing,
`put X in/on Y` -> `move X to Y`); the engine itself stays exact.
"""
from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("alfworld_cpu", ("alfworld",), max_turns=20, obs_chars=600,
                     list_actions="non_navigation", show_first_observation=True,
                     train_split="generated", eval_split="generated_eval", num_generated=1000,
                     num_eval_tasks=64, lenient_actions=True, room_size="small", steps=20)
    return tiny_rl(cfg, demos=1000, actor_steps=1200, eval_every=5, task_pool=16, sdae=True)
