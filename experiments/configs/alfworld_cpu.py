"""ALFWorld at CPU scale: tiny actor and extractor trained from scratch on
procedurally generated games (no downloaded data or checkpoints needed).

Budget arithmetic (2 cores): the actor is a d=128, 2-layer decoder over a
1,024-token vocabulary fitted to the game text. A step plays 8 tasks x 4
rollouts = 32 episodes of at most 20 turns; a compact prompt is ~100-150
tokens and an action ~8 tokens, so a step samples ~32 x 20 x 10 = 6.4k new
tokens (prefill ~80k tokens, forward only) and trains on step-level samples
of ~60-90k tokens: ~20-40 s a step. 30 steps + warm start + 4 evaluations
of 32 games (with and without experience) fit in ~30 minutes.
"""
from crl_jax.experience.config import ExperienceConfig
from crl_jax.learner import OptimConfig
from crl_jax.rollout import RolloutConfig
from crl_jax.run_config import (AdvantageSpec, EnvSpec, ExperienceSpec, ModelSpec, RunConfig,
                                TrainSpec, WarmStartSpec)
from kernels.policy_losses import PolicyLossConfig


def get_config() -> RunConfig:
    tiny = ModelSpec(hidden_size=128, intermediate_size=384, num_layers=2, num_heads=4,
                     num_kv_heads=2, head_dim=32)
    return RunConfig(
        name="alfworld_cpu",
        actor=tiny,
        extractor=tiny,
        env=EnvSpec(names=("alfworld",), train_split="generated", eval_split="generated_eval",
                    num_generated=400, num_eval_tasks=32),
        rollout=RolloutConfig(max_turns=20, max_new_tokens=12, history=1, temperature=1.0,
                              format="compact"),
        actor_optim=OptimConfig(lr=3e-4, micro_batch=64, grad_clip=1.0),
        actor_loss=PolicyLossConfig.split_grpo_released(),
        extractor_optim=OptimConfig(lr=1e-4, micro_batch=16, grad_clip=1.0),
        extractor_loss=PolicyLossConfig.cispo_paper(),
        experience=ExperienceSpec(mode="comp_rl", guided_fraction=0.5, merge_every=5,
                                  extractor_train_after=5, extractor_max_new_tokens=64,
                                  embedder="hashing",
                                  bank=ExperienceConfig(train_batch_size=32, workers=2,
                                                        consolidation_context=1)),
        advantages=AdvantageSpec(mode="split", normalize_std=True, success_reward=1.0,
                                 failure_reward=0.0),
        warm_start=WarmStartSpec(demos=200, actor_steps=60, actor_lr=3e-3, extractor_steps=40,
                                 extractor_lr=3e-3, batch=32, vocab_size=1024),
        train=TrainSpec(steps=30, tasks_per_step=8, group_size=4, eval_every=10,
                        checkpoint_every=10, seed=0, out_dir="runs/alfworld_cpu"),
    )
