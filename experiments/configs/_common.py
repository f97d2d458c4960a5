"""Shared pieces of the presets (not a preset itself: the name starts with _)."""
import dataclasses
import os

from crl_jax.experience.config import ExperienceConfig
from crl_jax.rl.learner import OptimConfig
from crl_jax.rl.rollout import RolloutConfig
from crl_jax.training.config import (AdvantageSpec, EnvSpec, ExperienceSpec, ModelSpec, RunConfig,
                                TrainSpec, WarmStartSpec)
from kernels.policy_losses import PolicyLossConfig

# Paper-scale checkpoints are local Hugging Face directories under this root
# (override any path on the command line: actor.checkpoint=/path/to/dir).
CHECKPOINTS = os.environ.get("CRL_CHECKPOINTS", "/data/checkpoints")
WARM_CACHE = "runs/warm_start_cache"  # relative to where run.py runs, like train.out_dir

def _env(envs: tuple, env_kw: dict) -> EnvSpec:
    """The presets' environments. MiniHack games take NetHack's moon phase,
    night and midnight from the task seed instead of the machine's clock, so
    arms run at different hours (or on different days) play the same games."""
    seeded = any(name.startswith("MiniHack-") for name in envs)
    return EnvSpec(names=envs, **{"seeded_clock": seeded, **env_kw})


TINY = ModelSpec(hidden_size=128, intermediate_size=384, num_layers=2, num_heads=4,
                 num_kv_heads=2, head_dim=32)


def cpu_config(name: str, envs: tuple, *, max_turns: int, obs_chars: int = 240,
               list_actions: str = "none", steps: int = 30, tasks_per_step: int = 4,
               group_size: int = 8,
               failure_reward: float = 0.0, demos: int = 200, max_new_tokens: int = 12,
               show_first_observation: bool = False, max_prompt_tokens: int = 512,
               warm_start: WarmStartSpec | None = None, **env_kw) -> RunConfig:
    """A tiny-model preset: models from scratch, warm start on expert demos, then RL."""
    return RunConfig(
        name=name, actor=TINY, extractor=TINY,
        env=_env(envs, env_kw),
        rollout=RolloutConfig(max_turns=max_turns, max_new_tokens=max_new_tokens, history=2,
                              max_prompt_tokens=max_prompt_tokens,
                              temperature=1.0, format="compact", list_actions=list_actions,
                              obs_chars=obs_chars, show_first_observation=show_first_observation),
        actor_optim=OptimConfig(lr=3e-4, micro_batch=64, grad_clip=1.0),
        actor_loss=PolicyLossConfig.split_grpo_released(),
        extractor_optim=OptimConfig(lr=1e-4, micro_batch=16, grad_clip=1.0),
        extractor_loss=PolicyLossConfig.cispo_paper(),
        # sync: consolidation and extractor training at fixed points of the
        # step, so a seed repeats its run (effects here are a few games in 64).
        experience=ExperienceSpec(mode="comp_rl", guided_fraction=0.5, merge_every=5, sync=True,
                                  merger="dedup", extractor_train_after=5,
                                  # Expert plan answers reach 71 tokens, 5% of them past
                                  # 64 (`python experiments/diagnostics/extractor_fit.py`): a cut
                                  # answer is malformed JSON, so the cap leaves margin.
                                  extractor_max_new_tokens=96,
                                  embedder="hashing",
                                  bank=ExperienceConfig(train_batch_size=32, workers=2,
                                                        recency_clock="steps",
                                                        consolidation_context=1)),
        advantages=AdvantageSpec(mode="split", normalize_std=True, failure_reward=failure_reward),
        # Runs of one warm-start setting share it (experiments/warm_start.py builds one ahead).
        warm_start=warm_start or WarmStartSpec(demos=demos, actor_steps=300, actor_lr=3e-3,
                                               extractor_steps=60, extractor_lr=3e-3, batch=32,
                                               vocab_size=1024, cache_dir=WARM_CACHE),
        # K = 8 rollouts a task: split-GRPO's subgroups then hold 4 episodes each.
        train=TrainSpec(steps=steps, tasks_per_step=tasks_per_step, group_size=group_size,
                        eval_every=10,
                        checkpoint_every=10, seed=0, out_dir=f"runs/{name}"),
    )


@dataclasses.dataclass(frozen=True)
class Limits:
    """An episode's limits: turns, new tokens a turn, and tokens in the whole
    conversation (prompt and every answer; a conversation that outgrows it
    ends there)."""

    max_turns: int
    max_new_tokens: int
    max_sequence: int


# The released code's (its yaml: max_actions_per_traj, max_tokens_per_step,
# sequence_length), the same for every environment it configures.
RELEASED_LIMITS = Limits(max_turns=30, max_new_tokens=4096, max_sequence=32768)
PROFILES = ("released", "paper")


def paper_config(name: str, envs: tuple, *, paper_limits: Limits, steps: int,
                 tasks_per_step: int, failure_reward: float = 0.0,
                 actor: str = "Qwen2.5-7B-Instruct", profile: str = "released",
                 **env_kw) -> RunConfig:
    """The paper's setting (PAPER.md "Paper-scale settings"): Qwen checkpoints,
    K = 8 rollouts per task split 4 guided / 4 free, lr 1e-6, each episode one
    growing conversation trained as one sequence, in one of two profiles:

    - released (the default): what the authors' released code does
      (BUILD.md "The paper presets and the authors' released code" gives each
      setting's source): its prompt and <think>/<answer> format, a format
      failure ends the episode with -1, advantages r - mean without std, the
      per-token ratio, 30 turns of 4,096 tokens in 32,768, the actor's first
      update after 5 steps, search-and-ask and the actor's judging of its
      entry on, the extractor reading guided episodes whole with only their
      entry, sampling at 1.0 / 0.99 with 8,192 new tokens; the actor's loss
      at temperature 1 (sampling at 0.99), the extractor's CISPO averaged per
      sequence, Eq. 6 scored by rank with the recent top-1's dropout.
    - paper: where the paper's text says otherwise: its table's limits, mean
      and std in advantages, the trajectory ratio of Eq. 4-5, no judging (App.
      B's variant), the actor trained from the first step, CISPO averaged
      over all tokens (Eq. 3), Eq. 6 scored by similarity.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile={profile!r}; valid: {PROFILES}")
    released = profile == "released"
    limits = RELEASED_LIMITS if released else paper_limits
    # Attention 1,024 queries at a time: long samples' scores are their
    # largest activation (BUILD.md "Will a preset fit?").
    big = dict(dtype="bfloat16", param_dtype="bfloat16", scan_layers=True, remat=True,
               attention_chunk=1024)
    alfworld = "alfworld" in envs
    return RunConfig(
        name=name,
        actor=ModelSpec(checkpoint=os.path.join(CHECKPOINTS, actor), **big),
        extractor=ModelSpec(checkpoint=os.path.join(CHECKPOINTS, "Qwen3-4B-Thinking-2507"), **big),
        # ALFWorld's engine speaks the 0.4 command set ("move X to Y"); the
        # released templates write "put X in/on Y", which lenient_actions maps.
        env=_env(envs, {"num_eval_tasks": 134, "lenient_actions": alfworld, **env_kw}),
        # A thinking actor judging an entry (experience.actor_critic) reasons
        # first: it gets a turn's budget.
        rollout=RolloutConfig(max_turns=limits.max_turns, max_new_tokens=limits.max_new_tokens,
                              max_prompt_tokens=limits.max_sequence, history=4,
                              temperature=0.99, top_p=0.99, top_k=100, format="chat",
                              prompt_style="released", conversation=True,
                              end_on_format_failure=True,
                              judge_max_new_tokens=limits.max_new_tokens),
        # The released loss reads raw logits (sampling alone is at 0.99).
        actor_optim=OptimConfig(lr=1e-6, micro_batch=8, grad_clip=1.0,
                                temperature=1.0 if released else 0.99),
        actor_loss=(PolicyLossConfig.split_grpo_released() if released
                    else PolicyLossConfig.split_grpo_paper()),
        extractor_optim=OptimConfig(lr=1e-6, micro_batch=8, grad_clip=1.0, temperature=1.0),
        extractor_loss=(PolicyLossConfig.cispo_released() if released
                        else PolicyLossConfig.cispo_paper()),
        experience=ExperienceSpec(
            mode="comp_rl", guided_fraction=0.5, merge_every=5, search_and_ask=True,
            extractor_train_after=5, extractor_max_new_tokens=8192,
            extractor_max_prompt_tokens=limits.max_sequence,
            extractor_temperature=1.0, extractor_top_p=0.99,
            consolidate="guided", trajectory_obs_chars=0, trajectory_answers="whole",
            actor_critic=released, critic_reject=-1.0 if released else 0.0,
            embedder=os.path.join(CHECKPOINTS, "Qwen3-Embedding-0.6B"),
            # Eq. 6's 300 s is about one step of the paper's runs: count steps.
            # Released: s_rank by position, a recent top-1 dropped w.p. 0.5.
            bank=ExperienceConfig(recency_clock="steps", consolidation_context=0,
                                  diversity_score="rank" if released else "similarity",
                                  released_top1_shuffle=released)),
        advantages=AdvantageSpec(mode="split", normalize_std=not released,
                                 failure_reward=failure_reward, format_failure_reward=-1.0),
        warm_start=WarmStartSpec(demos=0, actor_steps=0, extractor_steps=0),
        train=TrainSpec(steps=steps, tasks_per_step=tasks_per_step, group_size=8, eval_every=16,
                        checkpoint_every=8, seed=0, out_dir=f"runs/{name}",
                        sample_unit="episode", actor_train_after=5 if released else 0),
    )


def tiny_rl(cfg: RunConfig, *, demos: int, actor_steps: int, eval_every: int, task_pool: int,
            extractor_batch: int | None = None, sdae: bool = False) -> RunConfig:
    """The RL settings the tiny presets were calibrated to (alfworld_cpu's
    docstring says why): lr 5e-4, negative advantages scaled by 0.3, no win
    credit for rejected actions, 2 mini-batches, a 300-step extractor warm
    start, a fixed task pool disjoint from the warm start's games (RL must meet
    games the actor has not imitated, or memory has nothing to add); plus each
    preset's warm-start size, evaluation period and extractor CISPO batch."""
    bank = cfg.experience.bank
    if extractor_batch is not None:
        bank = dataclasses.replace(bank, train_batch_size=extractor_batch)
    return dataclasses.replace(
        cfg,
        experience=dataclasses.replace(cfg.experience, bank=bank),
        actor_optim=dataclasses.replace(cfg.actor_optim, lr=5e-4),
        advantages=dataclasses.replace(cfg.advantages, sdae=sdae, negative_weight=0.3,
                                       rejected_turn_credit=False),
        warm_start=dataclasses.replace(cfg.warm_start, demos=demos, actor_steps=actor_steps,
                                       extractor_steps=300),
        train=dataclasses.replace(cfg.train, eval_every=eval_every, actor_mini_batches=2,
                                  task_pool=task_pool, pool_disjoint=True))
