"""Budgets of the figure runs and the arm factory every figure script uses.

Every arm is its preset plus the budget's overrides plus the arm's own
switches, always with an explicit experience.mode: arms of different figures
with the same settings are then the same run (dedupe by preset, overrides,
seed), e.g. the Comp. RL and Baseline arms of Fig. 3, 5, 9 and SDAE are
seed 0 of Fig. 6's.

quick: a check of the whole machinery in under an hour on 2 cores. Models
are barely warm-started and train 2 RL steps, so its numbers say nothing
about the method. full: the presets' own warm start and step counts.
paper: each figure's arms, with the same switches, on the paper preset of
its CPU preset (PAPER_PRESETS; the released profile, or the paper's text
with ``set_paper_profile("paper")``), one seed; figures whose presets have
no paper preset (the studies of households, regimes, oracles) have no
paper arms. Its estimate is device-hours on an accelerator
(crl_jax/training/cost_model.py), not minutes on 2 cores.

A figure's seed is the seed of everything: train.seed and warm_start.seed
(the games, the demonstrations, the tiny models' init and their SFT). The
arms of one seed start from that seed's warm start, shared through the
sweep's warm-start cache, so each comparison is paired within a warm start
and a finding has to hold across three of them: at this scale the warm
start moves the outcome more than the arms differ (a warm start retrained
under float-rounding-level changes ends 20 RL steps at 0.57 training
success instead of 0.18; docs/TRAINER.md "It repeats"). Seed 0's arms carry
no warm_start.seed override (the presets' is 0), so its records stay
current.

Time model (rough, for the ETA and the stated budgets; calibrated on the
alfworld_cpu default run alone on 2 cores, 23m06s: a process start with its
JIT compiles ~40 s, an expert demo ~0.06 s, a warm-start SFT step ~0.6 s,
an episode ~0.375 s whether trained on (update included) or evaluated;
other presets scale the episode by _ENV_COST: MiniHack Room's measured on a
20-step run, the others guesses). Multi-task mixtures scale both the episode
and the SFT step by _MIXTURE_COST, by number of games, measured on the
mixtures' runs, whose long WebShop/ALFWorld prompts set the width of most
micro-batches: the 3-task baseline made with trimmed updates took
2.48 s a warm-start SFT step alone and 52 minutes for its 20 RL steps and
3 evaluations (1,248 episodes) beside another arm, about 1.2 s an episode
alone; the 6-task run made before the trim took 6.3 minutes a
step with two arms on 2 cores and 2.67 s a warm-start SFT step alone. It
reads each arm's resolved config, and a sweep pays each distinct warm start
once.
`reproduce.py --dry_run` prints the arms and the total.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from experiments.figures.common import Arm, arm_config, check_budget

# Overrides shared by every arm of a budget (keys the presets all have).
QUICK = ("train.steps=2", "train.eval_every=2", "train.checkpoint_every=2",
         "train.tasks_per_step=2", "train.group_size=4", "env.num_eval_tasks=4",
         "warm_start.demos=20", "warm_start.actor_steps=20", "warm_start.extractor_steps=10",
         "experience.extractor_train_after=1", "experience.bank.train_batch_size=8",
         "experience.search_and_ask=false")
# The presets as they are (steps, evaluation, warm start); search-and-ask
# pinned off so that Fig. 5's "no search-and-ask" arm is Fig. 6's Comp. RL run.
FULL: tuple[str, ...] = ("experience.search_and_ask=false",)

SEEDS = {"quick": {"main": (0, 1, 2), "ablation": (0,)},
         "full": {"main": (0, 1, 2), "ablation": (0, 1, 2)},
         "paper": {"main": (0,), "ablation": (0,)}}
# The checkpoint preset each CPU preset stands in for (budget "paper").
PAPER_PRESETS = {"alfworld_cpu": "alfworld", "minihack_room_cpu": "minihack_room",
                 "webshop_cpu": "webshop", "multitask3_cpu": "multitask3", "swe_cpu": "swe"}
ACCELERATOR = "h100"  # what budget "paper" estimates device-hours on
_paper_profile = ["released"]


class NoPaperPreset(ValueError):
    """A figure's preset has no paper preset: the figure has no paper arms."""


class CpuOnlyVariant(ValueError):
    """A variant that changes a tiny model's size: a checkpoint sets its own,
    so at the paper budget the variant has no arm (its figure keeps the others)."""


_SIZE_KEYS = ("hidden_size", "intermediate_size", "num_layers", "num_heads", "num_kv_heads",
              "head_dim", "family")


def _check_paper_variant(base, overrides) -> None:
    for item in overrides:
        key = item.partition("=")[0]
        role, _, field = key.partition(".")
        if (role in ("actor", "extractor") and field in _SIZE_KEYS
                and getattr(base, role).checkpoint):
            raise CpuOnlyVariant(f"{key} sizes a tiny model; the paper preset's "
                                 f"{role} is a checkpoint")


def set_paper_profile(profile: str) -> None:
    """The profile budget "paper" runs: "released" (the presets' default)
    or "paper" (NAME:paper, the paper's text)."""
    from experiments.configs._common import PROFILES
    if profile not in PROFILES:
        raise ValueError(f"profile={profile!r}; valid: {PROFILES}")
    _paper_profile[0] = profile


def paper_preset(preset: str) -> str:
    """The paper preset (with the chosen profile) that ``preset`` stands in for."""
    if preset not in PAPER_PRESETS:
        raise NoPaperPreset(f"{preset} has no paper preset (those with one: "
                            f"{', '.join(sorted(PAPER_PRESETS))})")
    name = PAPER_PRESETS[preset]
    return name if _paper_profile[0] == "released" else f"{name}:{_paper_profile[0]}"

_STARTUP_S, _SFT_STEP_S, _DEMO_S, _EPISODE_S = 40.0, 0.6, 0.06, 12.0 / 32
# Relative cost of an episode (turn cap and prompt length).
_ENV_COST = {"alfworld_cpu": 1.0, "minihack_room_cpu": 0.85, "webshop_cpu": 0.5,
             "multitask3_cpu": 0.9, "swe_cpu": 1.5}
# Multi-task: (episode, SFT step) cost over the single-game model, by number of
# games (see the module docstring; 3 games: (52 min / 2 arms - 40 s start) /
# 1,248 episodes = 1.22 s, 3.6x the 0.9 x 0.375 s model, 3.5x as the test
# suite ran beside for 14 of those minutes; 2.48 s an SFT step, 4.1x.
# 6 games: 6.3 min / 2 arms / 96 episodes = 1.97 s an episode, 5.8x; 2.67 s
# an SFT step, 4.4x).
_MIXTURE_COST = {3: (3.5, 4.1), 6: (5.8, 4.4)}


def mixture_cost(cfg) -> tuple[float, float]:
    """(episode, SFT step) factors of a config's mixture of games; 1 for one
    game, the largest measured one beyond the measured sizes."""
    n = len(cfg.env.names)
    if n <= 1:
        return 1.0, 1.0
    known = sorted(_MIXTURE_COST)
    return _MIXTURE_COST[min((k for k in known if k >= n), default=known[-1])]


def base_overrides(budget: str) -> tuple[str, ...]:
    return QUICK if check_budget(budget) == "quick" else FULL


def seeds(budget: str, kind: str = "main") -> tuple[int, ...]:
    return SEEDS[check_budget(budget)][kind]


def warm_start_s(cfg) -> float:
    """Seconds of a resolved config's warm start (demos + SFT of both models)
    when it is not in the warm-start cache."""
    ws = cfg.warm_start
    sft = ws.actor_steps + (0 if cfg.experience.mode == "none" else ws.extractor_steps)
    return sft * _SFT_STEP_S * mixture_cost(cfg)[1] + ws.demos * _DEMO_S


def rl_s(cfg) -> float:
    """Seconds of a resolved config's process start, RL steps and evaluations."""
    t, n_envs = cfg.train, len(cfg.env.names)
    eval_modes = 1 if cfg.experience.mode == "none" else 2
    every = t.eval_every
    evals = 1 + t.steps // every + (1 if t.steps % every else 0) if every else 0
    eval_eps = evals * eval_modes * cfg.env.num_eval_tasks * n_envs
    episode = _EPISODE_S * _ENV_COST.get(cfg.name, 1.0) * mixture_cost(cfg)[0]
    return _STARTUP_S + (t.steps * t.tasks_per_step * t.group_size * n_envs + eval_eps) * episode


def estimate_s(arm: Arm) -> float:
    """Seconds one arm should take on 2 cores alone (see the module docstring);
    for a paper preset, its device-hours on ACCELERATOR in seconds."""
    cfg = arm_config(arm)
    if cfg.actor.checkpoint:
        from crl_jax.training.cost_model import device_hours
        return device_hours(cfg, ACCELERATOR)["total"] * 3600
    return warm_start_s(cfg) + rl_s(cfg)


def sweep_estimate_s(arms: Sequence[Arm]) -> float:
    """Seconds for all ``arms`` when they share warm starts through one cache
    (reproduce.py passes one): each distinct warm start is paid once."""
    from crl_jax.training.warm_cache import warm_start_key
    warm: dict[str, float] = {}
    total = 0.0
    for arm in arms:
        cfg = arm_config(arm)
        key = warm_start_key(cfg)
        warm[key] = max(warm.get(key, 0.0), warm_start_s(cfg))
        total += rl_s(cfg)
    return total + sum(warm.values())


def make_arm(label: str, preset: str, budget: str, extra: Sequence[str] = (), seed: int = 0,
             mode: str = "comp_rl") -> Arm:
    """The arm ``label`` of a figure: preset + budget overrides + ``extra``,
    with experience.mode=``mode`` (an ``extra`` mode wins) and the seed's own
    warm start (warm_start.seed=``seed``; an ``extra`` one wins); overrides that set
    what the preset already has are dropped (except the always-explicit
    experience.mode), so SDAE's "on" arm on a preset with SDAE on is the same
    run as Fig. 6's, not a duplicate."""
    from experiments.configs import load_preset
    if budget == "paper":
        preset = paper_preset(preset)
    base = load_preset(preset)
    # The released profile has the actor judge its retrieved entry; an arm
    # without a bank has none to judge (the CPU presets never judge).
    no_judge = (("experience.actor_critic=false",)
                if mode == "none" and base.experience.actor_critic else ())
    overrides = (*base_overrides(budget), f"experience.mode={mode}",
                 f"warm_start.seed={int(seed)}", *no_judge, *extra)
    if budget == "paper":  # a checkpoint is its own start: no warm-start switch applies
        overrides = tuple(o for o in overrides if not o.startswith("warm_start."))
        _check_paper_variant(base, overrides)
    given = Arm(label, preset, overrides, seed)
    kept = tuple(item for item in given.overrides if item.startswith("experience.mode=")
                 or _changes(base, item))
    arm = Arm(label, preset, kept, seed)
    return dataclasses.replace(arm, est_s=estimate_s(arm))


def _changes(base, item: str) -> bool:
    """Whether override ``item`` changes ``base``; one that is an error on
    its own (valid only with another of the arm's, e.g. a control that needs
    a mode) is kept."""
    from crl_jax.training.config_io import ConfigError, apply_overrides
    try:
        return apply_overrides(base, [item]) != base
    except ConfigError:
        return True


def comp_and_baseline(preset: str, budget: str, seed_list: Sequence[int],
                      comp_label: str = "Comp. RL", base_label: str = "Baseline (GRPO)"):
    """The two arms every figure compares against, on the shared settings."""
    return ([make_arm(comp_label, preset, budget, seed=s) for s in seed_list],
            [make_arm(base_label, preset, budget, seed=s, mode="none") for s in seed_list])
