"""ALFWorld at CPU scale: tiny actor and extractor trained from scratch on
procedurally generated games (no downloaded data or checkpoints needed).

Budget arithmetic (2 cores): the actor is a d=128, 2-layer decoder over a
1,024-token vocabulary fitted to the game text. A step plays 8 tasks x 4
rollouts = 32 episodes of at most 20 turns. A compact prompt (goal, the
room's first description, two history lines, the observation and the
non-navigation actions) is ~200-250 tokens and an action ~6 tokens, so a
step samples ~32 x 20 x 6 = 4k new tokens (prefill ~150k tokens, forward
only) and trains on step-level samples of the same ~150k tokens: ~40-60 s a
step. Warm start (200 expert games, 300 SFT steps) ~5 minutes; 30 steps and
4 evaluations of 32 games (with and without experience) ~30 minutes.

Actions go through the agent-side lenient parser (case, spacing,
`put X in/on Y` -> `move X to Y`); the engine itself stays exact.
"""
from experiments.configs._common import cpu_config


def get_config():
    return cpu_config("alfworld_cpu", ("alfworld",), max_turns=20, obs_chars=600,
                      list_actions="non_navigation", show_first_observation=True,
                      train_split="generated", eval_split="generated_eval", num_generated=400,
                      num_eval_tasks=32, lenient_actions=True)
