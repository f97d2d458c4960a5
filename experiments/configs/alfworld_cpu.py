"""ALFWorld at CPU scale: a tiny actor and extractor trained from scratch on
procedurally generated games (no downloaded data or checkpoints needed).

Budget arithmetic (2 cores): both models are d=128, 2-layer decoders over a
1,024-token vocabulary fitted to the game text. The compact prompt (goal,
the room's first description, two history lines, the observation and the
non-navigation actions) is ~200 tokens and an action ~6. Warm start: 1,000
expert games under a 30-turn cap, actor 1,200 SFT steps (~12 minutes),
extractor 300 (~4 minutes). RL: 20 steps of 4 tasks x 8 rollouts (32
episodes, split-GRPO subgroups of 4) with 2 PPO mini-batches a step; 5
evaluations on 64 unseen games, with and without experience.

Why the settings that differ from the defaults:
- Small rooms (env.room_size=small: ~8 receptacles, all six task types) and
  the agent-side lenient action parser (case, spacing, `put X in/on Y` ->
  `move X to Y`; the engine itself stays exact): a tiny actor has to win
  some games for RL to have a signal.
- A 10-turn cap: tight enough that a searching player often runs out of
  turns and knowing where things lie wins. docs/FINDINGS.md, "The own plan
  in three regimes", gives the experts' success at each cap and what a
  12-turn cap or a 64-game pool does instead.
- An RL pool of 16 games kept apart from the warm start's demonstrations
  (train.task_pool, train.pool_disjoint): RL must meet games the actor
  never imitated, or memory has nothing to add.
- warm_start.extractor_missteps=0.5: the extractor's warm start also shows
  won games with rejected actions in the trajectory, as the actor's RL
  trajectories have them and an expert's never do (docs/FINDINGS.md,
  "Extractor missteps"). The actor's warm start does not depend on it.
- tiny_rl's RL settings for an actor with few wins (lr 5e-4, negative
  advantages scaled by 0.3, no win credit for turns whose action was
  rejected; docs/TRAINER.md, "RL settings for a tiny actor"), and SDAE for
  partial credit (docs/FINDINGS.md, "SDAE").
The guided demonstrations are the warm start's default mix (the game's own
plan, the plan with a wrong step, another game's plan the expert ignores;
crl_jax/training/guided_demos.py), so a line predicts the actions exactly
when it is right (docs/FINDINGS.md, "Oracle ladder").
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
