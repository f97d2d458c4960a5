"""ALFWorld at CPU scale: tiny actor and extractor trained from scratch on
procedurally generated games (no downloaded data or checkpoints needed).

Budget arithmetic (2 cores): the actor is a d=128, 2-layer decoder over a
1,024-token vocabulary fitted to the game text. Games are small rooms
(env.room_size=small: ~8 receptacles), all six task types. A compact prompt
(goal, the room's first description, two history lines, the observation and
the non-navigation actions) is ~200 tokens and an action ~6 tokens. Warm
start: 1,000 expert games (under a 30-turn cap), actor 1,200 SFT steps (~12
minutes), extractor 300 (~4 minutes). RL trains on a fixed pool of 16 other
games (train.task_pool, train.pool_disjoint: the actor never imitated them):
a step plays 4 tasks x 8 rollouts = 32 episodes (split-GRPO subgroups of 4)
and makes 2 PPO mini-batch updates; 20 steps and 5 evaluations on 64 unseen
games (with and without experience).

A memory regime: the turn cap is 10. `python experiments/diagnostics/expert_turn_cap.py
--games=300` on these games: the searching expert wins 0.49 of them within 8
actions, 0.74 within 10, 0.93 within 12 (8.6 actions when it wins); the
expert that knows the game's own plan wins 0.88 / 1.00 / 1.00 (6.1 actions);
with 1 wrong step 0.73 / 0.87 / 0.97; with 2, 0.48 / 0.69 / 0.86. The tiny
actor needs ~1.2x the expert's actions, so at 10 searching often fails and
knowing where things are wins.

The actor's guided demonstrations (warm_start.guided_source, half of them)
show the game's own plan followed by the informed expert, the plan with one
wrong step, or another game's plan the searching expert ignores
(crl_jax/training/guided_demos.py), so the line predicts the actions exactly
when it is right. A plan names the walk to where each thing lies ("go to
countertop 2 > take apple 1 from countertop 2 > ..."): the actor copies a
step it can read verbatim, not one it would have to derive.

RL settings for a tiny actor with few wins (see README, "Trainer"): episode-
balanced turn weights, negative advantages scaled by 0.3 (weighted
REINFORCE), no share of a win's credit for turns whose action was rejected
(without it a win reinforces its rejected actions and their rate creeps up
from 0.47 to 0.62 in 20 steps), subtask-decomposed advantages (SDAE) for
partial credit, lr 5e-4.

The extractor's warm start also shows half of the won demos with one or two
rejected actions in the trajectory, answered with the clean game's plan
(warm_start.extractor_missteps=0.5): the actor's trajectories in RL hold
rejected actions and an expert's never do. Without it 9.6% of the
extractor's RL answers were malformed (3 seeds), with it 2.1% (figure
extractor_missteps; docs/RESULTS_READING.md). The actor's warm start does not
depend on it (its own samples and generator).

Actions go through the agent-side lenient parser (case, spacing,
`put X in/on Y` -> `move X to Y`); the engine itself stays exact.
"""
import dataclasses

from experiments.configs._common import cpu_config, tiny_rl


def get_config():
    cfg = cpu_config("alfworld_cpu", ("alfworld",), max_turns=10, obs_chars=600,
                     list_actions="non_navigation", show_first_observation=True,
                     train_split="generated", eval_split="generated_eval", num_generated=1016,
                     num_eval_tasks=64, lenient_actions=True, room_size="small", steps=20)
    cfg = tiny_rl(cfg, demos=1000, actor_steps=1200, eval_every=5, task_pool=16, sdae=True)
    return dataclasses.replace(cfg, warm_start=dataclasses.replace(cfg.warm_start,
                                                                   extractor_missteps=0.5))
