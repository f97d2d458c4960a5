"""The configuration of a training run: a tree of frozen dataclasses.

Presets are modules with a ``get_config()``, one a preset, that the entry points
hand in (config_io.PresetCatalog); the command
line changes any leaf with dotted overrides (``train.steps=2``), see
crl_jax/training/config_io.py.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from typing import Literal

from crl_jax.experience.config import ExperienceConfig
from crl_jax.rl.learner import OptimConfig
from crl_jax.rl.rollout import RolloutConfig
from crl_jax.training.controls import MOVED_KEYS, ControlSpec
from crl_jax.training.env_spec import EnvSpec
from crl_jax.training.lesson_checks import check_lesson_teaching
from crl_jax.training.warm_start_spec import WarmStartSpec
from crl_jax.training.experience_modes import (
    EXPERIENCE_MODES,
    ExperienceMode,
    ExperienceModeProperties,
)
from kernels.policy_losses import PolicyLossConfig

AdvantageMode = Literal["split", "mixed", "grpo"]
ADVANTAGE_MODES = typing.get_args(AdvantageMode)
DEVICES_SPEC = re.compile(r"^(all|(first|last):[1-9]\d*)$")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model: a Hugging Face checkpoint directory, or a tiny decoder built
    from scratch (checkpoint == "") with the sizes below."""

    checkpoint: str = ""
    """Hugging Face checkpoint directory; empty = a tiny decoder from scratch."""
    tokenizer: str = ""  # "" = the checkpoint's, or one trained on environment text
    family: str = "qwen3"
    """Decoder layout: llama, qwen2 or qwen3 (tiny models)."""
    hidden_size: int = 128
    """Model width (tiny models)."""
    intermediate_size: int = 384
    """MLP width (tiny models)."""
    num_layers: int = 2
    """Decoder layers (tiny models)."""
    num_heads: int = 4
    """Attention heads (tiny models)."""
    num_kv_heads: int = 2
    """Key/value heads, grouped-query attention (tiny models)."""
    head_dim: int = 32
    """Attention head width (tiny models)."""
    dtype: str = "float32"
    """Activation dtype: float32 or bfloat16."""
    param_dtype: str = "float32"
    """Parameter dtype: float32 or bfloat16."""
    scan_layers: bool = False
    """Run the layers under jax.lax.scan (faster compiles for deep models)."""
    remat: bool = False
    """Recompute activations in the backward pass (saves memory)."""
    attention_chunk: int = 0
    """Attend this many queries at a time (0 = all): exact, and the attention
    scores of long samples, their largest activation, shrink accordingly."""
    mesh_data: int = 1
    """Mesh axis sizes: data parallel."""
    mesh_fsdp: int = -1
    """Mesh axis sizes: fully sharded data parallel (-1 = the remaining devices)."""
    mesh_tp: int = 1
    """Mesh axis sizes: tensor parallel."""
    devices: str = "all"
    """The role's devices: all, or first:N / last:N to give each role its own."""

    def __post_init__(self):
        from models.config import DTYPE_NAMES, FAMILIES
        for key in ("dtype", "param_dtype"):
            if getattr(self, key) not in DTYPE_NAMES:
                raise ValueError(f"{key}={getattr(self, key)!r}; valid: {', '.join(DTYPE_NAMES)}")
        if not DEVICES_SPEC.match(self.devices):
            raise ValueError(f"devices={self.devices!r}; valid: all, first:N, last:N (N >= 1)")
        if self.family not in FAMILIES:
            raise ValueError(f"family={self.family!r}; valid: {', '.join(FAMILIES)}")


@dataclasses.dataclass(frozen=True)
class ExperienceSpec(ExperienceModeProperties):
    """How experience enters training (the paper's method and its baselines).

    comp_rl: extractor maintains the bank online and is trained (CISPO).
    none: no experience (the GRPO baseline). offline: the bank is built once
    by the fixed (warm-started) extractor, then static. static_online: the
    fixed extractor maintains the bank online. exp_only: the extractor is
    trained, the actor is frozen. oracle: a control for the actor, not a
    method: retrieval returns the expert's plan of the episode's own game
    (oracle_noise steps made wrong), no extractor (crl_jax/training/oracle.py).
    What each mode does is read through properties (``retrieves``,
    ``trains_actor``, ...: crl_jax/training/experience_modes.py).
    """

    mode: ExperienceMode = "comp_rl"
    """comp_rl (the method), none (GRPO baseline), offline, static_online, exp_only, or
    oracle (a control: the own game's plan as the entry; see above, and the
    controls section for which plan)."""
    guided_fraction: float = 0.5  # 1.0 = all-guided rollouts (an ablation)
    merge_every: int = 5  # actor steps; 0 = no merge (ablation)
    merger: Literal["extractor", "dedup", "lessons", "lesson_votes", "lesson_evidence"] = "extractor"
    """Who decides a merge: the extractor (paper), exact-duplicate removal
    (tiny presets, whose extractor is not warm-started on merges), or
    (households) lessons of one type and room combined by their homes' votes;
    lesson_votes keeps the votes in the merged lesson, so it states every
    merged episode's evidence; lesson_evidence keeps, per receptacle, the
    episodes that found the type there and those that looked there, and
    ranks homes by that share (with controls.lesson_reader=rule, which then
    writes where each episode looked in vain; alfworld_lesson_merge.merge_lessons)."""
    lesson_homes: int = 2
    """merger lessons / lesson_votes / lesson_evidence: the homes a merged
    lesson keeps, best first (1: the one-home form
    warm_start.guided_source=lessonfirst teaches)."""
    search_and_ask: bool = False
    """The actor may ask the bank mid-episode; the extractor rewrites the best hit."""
    extractor_train_after: int = 5  # actor steps of warm-up before extractor training
    # At most this many extractor updates per actor step: without a cap the
    # background thread re-draws cooling-down entries (Eq. 7 weight 0) in a loop.
    extractor_updates_per_step: int = 1
    extractor_max_new_tokens: int = 96
    extractor_max_prompt_tokens: int = 1024
    """The extractor's prompts keep their last this many tokens (a long
    transcript loses its start)."""
    extractor_temperature: float | None = None
    """The extractor's sampling temperature; None = rollout.temperature (the
    released code: 1.0)."""
    extractor_top_p: float = 1.0
    """The extractor's nucleus sampling mass (the released code: 0.99)."""
    embedder: str = "hashing"  # hashing | minilm | a decoder embedding checkpoint dir
    bank: ExperienceConfig = ExperienceConfig()
    self_distillation: float = 0.0  # SFT weight on good guided turns (Fig. 9b); 0 = off
    actor_critic: bool = False
    """The Actor-Critic variant (paper App. B): the actor judges each retrieved
    entry before acting (accept / refine: rewrite it / reject), the episode
    reads what it kept, and the verdict's score (critic_accept, critic_refine,
    critic_reject) adds to the entry's credit (crl_jax/rl/critic.py). A tiny
    actor judges only if its warm start taught it (warm_start.judge_fraction).
    Who judges is a control (controls.critic)."""
    critic_accept: float = 1.0
    """Actor-Critic: added to an accepted entry's credit (paper App. B: 1)."""
    critic_refine: float = 0.5
    """Actor-Critic: added to a refined entry's credit (paper App. B: 0.5)."""
    critic_reject: float = 0.0
    """Actor-Critic: a rejected entry's credit, which its episode's outcome does
    not touch (paper App. B: 0; the released code uses -1)."""
    consolidate: Literal["all", "guided"] = "all"
    """Which finished episodes the extractor consolidates: every one, or the
    guided ones only (the authors' released code; a free episode's search-and-
    ask calls are still credited with its outcome)."""
    trajectory_obs_chars: int = 40
    """Each observation of a trajectory shown to the extractor is cut to this
    many characters; 0 = whole (the released code shows the full transcript)."""
    trajectory_sightings: bool = False
    """Households (beyond the paper): a clipped observation also names the
    objects of the goal's type it showed ("[in view: mug 1]"), so a lesson
    can count where a type was seen, not only where the actor picked it up
    (alfworld_lessons.read_sightings with experience.merger=lesson_evidence)."""
    sighting_places: bool = False
    """trajectory_sightings: the tag also names where the look stood
    ("[seen at drawer 2: mug 1]"), so the home a lesson states sits beside
    the sighting rather than some thirty characters before it. Shapes the
    extractor's warm start too (WarmStartInputs.sighting_places)."""
    sightings_of: Literal["goal", "every", "each"] = "goal"
    """trajectory_sightings: the objects a clip names, the goal's type's or
    every object's; "every" lets the rule reader write a lesson for each
    type a trajectory saw (alfworld_lessons.read_every_sighting); "each"
    asks the extractor once for each type a trajectory saw (at most
    experience.bank.max_ops_per_call, the goal's first), every call's clips
    naming that type and its goal restated about it, as an extractor taught
    with warm_start.extractor_sightings reads the goal's type."""
    trajectory_answers: Literal["action", "whole"] = "action"
    """Each turn of a trajectory shown to the extractor: the action alone, or
    the actor's whole answer, reasoning included (the released code)."""
    sync: bool = False
    """Deterministic experience pipeline: consolidation, merge and extractor
    training run at fixed points of each step (after the actor update, in
    that order) and retrieval ranks exactly, so a seed repeats its run and a
    resume continues it exactly. False: the threaded, asynchronous pipeline
    (paper scale). Needs bank.recency_clock="steps"."""


@dataclasses.dataclass(frozen=True)
class AdvantageSpec:
    mode: AdvantageMode = "split"
    """split (split-GRPO, Eq. 5), mixed (guided and free in one group) or grpo."""
    normalize_std: bool = True  # paper: mean and std; released config: mean only
    sdae: bool = False  # subtask-decomposed advantages (reconstruction)
    sdae_mix: float = 0.5  # weight of the SDAE term against the outcome advantage
    success_reward: float = 1.0
    """Reward of a won episode."""
    failure_reward: float = 0.0  # ALFWorld paper setting: -1
    format_failure_reward: float | None = None
    """Reward of an episode that rollout.end_on_format_failure ended (the
    released code: -1); None = failure_reward."""
    # Step-level samples: "episode" gives every episode the same total weight
    # (as a whole trajectory under seq-mean aggregation); "turn" weighs each
    # turn equally, so long episodes count more (episode_stats.episode_balanced).
    turn_weighting: Literal["episode", "turn"] = "episode"
    # Scale of negative advantages (1 = GRPO as in the paper; < 1 = weighted
    # REINFORCE, which keeps small actors with few wins from drifting).
    negative_weight: float = 1.0
    # A turn whose action the environment rejected changed nothing, so it
    # deserves none of a win's credit: False keeps its advantage <= 0 (a small
    # actor's wins otherwise reinforce their rejected actions and the rejected
    # rate creeps up). invalid_action_penalty > 0 also subtracts that much on
    # every rejected turn (shaping, not in the paper; 0 = off).
    rejected_turn_credit: bool = True
    invalid_action_penalty: float = 0.0


@dataclasses.dataclass(frozen=True)
class TrainSpec:
    steps: int = 30
    """RL steps of the run."""
    tasks_per_step: int = 8
    """Tasks each RL step plays (per environment of a mixture)."""
    group_size: int = 4  # K rollouts per task
    # Actor optimiser steps per rollout batch: the batch is shuffled and split
    # into this many mini-batches, each one AdamW step against the sampler's
    # (behaviour) log-probs, so later ones are off-policy and PPO-clipped
    # (verl's ppo_mini_batch_size; the paper's 1e-6 lr runs use 1).
    actor_mini_batches: int = 1
    actor_epochs: int = 1  # passes over the batch (each split into actor_mini_batches)
    actor_train_after: int = 0
    """RL steps that only play (and feed the bank) before the actor's first
    update (the released code: 5, its memory warm-up)."""
    sample_unit: Literal["turn", "episode"] = "turn"
    """What one actor training sequence is. turn: each turn's prompt and answer
    (prompts rendered afresh, a window of recent steps). episode: the whole
    episode as one sequence, every answer trained in the context it was
    sampled in (the authors' released code; needs rollout.conversation, and
    advantages.turn_weighting does not apply: the loss's aggregation weighs
    the episodes)."""
    # RL draws its tasks from a fixed random subset of this many training tasks
    # per environment (0 = all of them). The warm start still sees the whole
    # pool. A small pool lets a short run revisit its tasks, as the paper's
    # runs do (ALFWorld: 128 steps x 16 tasks over 1,466 tasks, ~11 rollouts
    # of each), and lets the experience bank serve the tasks it was built on.
    task_pool: int = 0
    step_seeded_draws: bool = False
    """Each step's tasks drawn by a generator seeded by (train.seed, step) alone,
    so runs of one seed that differ in their arm train on the same games at
    every step, and an arm's difference from its baseline is paired step by
    step. False: drawn by the run's one generator, which also shuffles the
    mini-batches (the number of samples moves it), so arms part after their
    first step and each step's success also differs by the games drawn."""
    pool_disjoint: bool = False
    """Draw the RL pool (train.task_pool) first and the warm start's demonstrations
    from the other training tasks, so RL meets games the actor never imitated."""
    eval_every: int = 10
    """Evaluate on held-out games every this many RL steps, at the end and before
    the first (0: never)."""
    checkpoint_every: int = 10
    """Save a checkpoint every this many RL steps and at the end (0: never)."""
    seed: int = 0
    """The RL seed: task picks, sampling, mini-batch order (warm_start.seed: all before RL)."""
    out_dir: str = "runs/default"
    """The run directory (run.py's --out_dir sets it)."""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    name: str = "default"
    """The run's name (the preset's by default)."""
    actor: ModelSpec = ModelSpec()
    extractor: ModelSpec = ModelSpec()
    env: EnvSpec = EnvSpec()
    rollout: RolloutConfig = RolloutConfig()
    actor_optim: OptimConfig = OptimConfig(lr=1e-4, micro_batch=32)
    actor_loss: PolicyLossConfig = PolicyLossConfig.split_grpo_released()
    extractor_optim: OptimConfig = OptimConfig(lr=1e-4, micro_batch=16)
    extractor_loss: PolicyLossConfig = PolicyLossConfig.cispo_paper()
    experience: ExperienceSpec = ExperienceSpec()
    advantages: AdvantageSpec = AdvantageSpec()
    warm_start: WarmStartSpec = WarmStartSpec()
    train: TrainSpec = TrainSpec()
    controls: ControlSpec = ControlSpec()
    """Research controls, not the method (crl_jax/training/controls.py)."""
    MOVED_KEYS: typing.ClassVar[dict[str, str]] = MOVED_KEYS

    @property
    def judge(self) -> str | None:
        """Who judges retrieved entries in rollouts (None: nobody)."""
        return self.controls.critic if self.experience.actor_critic else None

    def _check_pools(self) -> None:
        """The RL pool, the warm start's games and the households agree."""
        if self.train.pool_disjoint and not (self.train.task_pool or self.env.pool_households):
            raise ValueError("train.pool_disjoint needs a train.task_pool (or "
                             "env.pool_households) to keep apart")
        self.env.check_splits()
        self.env.check_households(self.train.task_pool)
        from crl_jax.training.guided_demos import parse_mix
        mix = parse_mix(self.warm_start.guided_source)
        if not self.env.households and any(s.startswith("lesson") for s, _ in mix):
            raise ValueError(f"warm_start.guided_source={self.warm_start.guided_source!r}: "
                             "lesson sources need households (env.households > 0)")
        if self.controls.lesson_room == "other" and (
                not self.env.households or self.experience.bank.retrieval_key != "lesson"):
            raise ValueError("controls.lesson_room=other rewrites lesson queries: it needs "
                             "env.households > 0 and experience.bank.retrieval_key=lesson")
        if self.controls.lesson_reader == "rule" and (
                self.experience.bank.lesson_room != "episode" or self.experience.trains_extractor
                or not self.experience.has_extractor or self.experience.static_bank):
            raise ValueError("controls.lesson_reader=rule reads lessons in place of the extractor: "
                             "it needs experience.bank.lesson_room=episode (its lessons name no "
                             "room) and a mode that writes online without training the "
                             "extractor (static_online)")

    def __post_init__(self):
        if self.experience.mode not in EXPERIENCE_MODES:
            raise ValueError(f"experience.mode={self.experience.mode!r}; valid: {EXPERIENCE_MODES}")
        if self.advantages.mode not in ADVANTAGE_MODES:
            raise ValueError(f"advantages.mode={self.advantages.mode!r}; valid: {ADVANTAGE_MODES}")
        if self.train.group_size < 2:
            raise ValueError("train.group_size must be >= 2 (group-relative advantages)")
        if self.advantages.turn_weighting not in ("episode", "turn"):
            raise ValueError(f"advantages.turn_weighting={self.advantages.turn_weighting!r}; "
                             "valid: episode, turn")
        if not 0.0 <= self.advantages.negative_weight <= 1.0:
            raise ValueError("advantages.negative_weight must be in [0, 1]")
        if self.advantages.invalid_action_penalty < 0:
            raise ValueError("advantages.invalid_action_penalty must be >= 0")
        if self.train.sample_unit not in ("turn", "episode"):
            raise ValueError(f"train.sample_unit={self.train.sample_unit!r}; valid: turn, episode")
        if self.train.sample_unit == "episode" and not self.rollout.conversation:
            raise ValueError("train.sample_unit=episode needs rollout.conversation=true (and "
                             "rollout.format=chat): an episode trains as the one conversation "
                             "it was sampled as")
        if self.train.actor_mini_batches < 1 or self.train.actor_epochs < 1:
            raise ValueError("train.actor_mini_batches and train.actor_epochs must be >= 1")
        if self.train.task_pool and self.train.task_pool < self.train.tasks_per_step:
            raise ValueError(f"train.task_pool={self.train.task_pool} is smaller than "
                             f"train.tasks_per_step={self.train.tasks_per_step} (0 = all tasks)")
        self._check_pools()
        from crl_jax.envs.alfworld_generator import ROOM_SIZES
        if self.env.room_size not in ROOM_SIZES:
            raise ValueError(f"env.room_size={self.env.room_size!r}; valid: {ROOM_SIZES}")
        if self.experience.extractor_max_prompt_tokens < 1 or self.experience.extractor_max_new_tokens < 1:
            raise ValueError("experience.extractor_max_prompt_tokens and "
                             "experience.extractor_max_new_tokens must be >= 1")
        if not 0 < self.experience.extractor_top_p <= 1:
            raise ValueError("experience.extractor_top_p must be in (0, 1]")
        if self.experience.trajectory_obs_chars < 0:
            raise ValueError("experience.trajectory_obs_chars must be >= 0 (0 = whole observations)")
        if not 0.0 <= self.experience.guided_fraction <= 1.0:
            raise ValueError("experience.guided_fraction must be in [0, 1]")
        if self.experience.lesson_homes < 1:
            raise ValueError("experience.lesson_homes must be >= 1 (a lesson names a home)")
        if self.experience.bank.merge_credit == "sources" and not self.experience.merger.startswith("lesson"):
            raise ValueError("experience.bank.merge_credit=sources credits the samples a merged "
                             "lesson states: it needs a lesson merger (experience.merger=lessons, "
                             f"lesson_votes or lesson_evidence), got {self.experience.merger!r}")
        from crl_jax.training.guided_demos import parse_mix
        parse_mix(self.warm_start.guided_source)  # a bad mix is an error here, not mid-run
        check_lesson_teaching(self)
        if self.experience.actor_critic and not self.experience.retrieves:
            raise ValueError("experience.actor_critic judges retrieved entries; "
                             "experience.mode=none retrieves none")
        if self.warm_start.ask_fraction and self.rollout.format != "compact":
            raise ValueError("warm_start.ask_fraction teaches the compact format's ask turns; "
                             f"rollout.format={self.rollout.format!r} has no warm start")
