"""Policy-gradient losses on per-token log-probs: PPO-clip (the loss part of
split-GRPO, paper Eq. 4-5) and CISPO (paper Eq. 3, MiniMax-M1).

Every loss is a pure function of (logprobs, old_logprobs, advantages, mask,
config) on [B, T] arrays (B sequences of T tokens) and returns
LossOutput(loss_sum, count, diagnostics); the loss is loss_sum / count (see
kernels.aggregation for why this pair is exact across micro-batches/shards).
Losses are to be minimised (they are the negated objectives J).

Guard rails (the same in every loss, and in kernels.fused_loss):
- Positions with mask == 0 are selected away before any arithmetic, so NaN or
  inf there (padding, prompt tokens, ignore-index targets) changes nothing and
  gets exactly zero gradient.
- A masked-in token whose log-prob, old log-prob or advantage is NaN/inf is
  dropped the same way: it adds zero loss and zero gradient, still counts in
  the denominators (which come from the mask alone, so that the fused path
  agrees), and is reported in diagnostics["nonfinite_tokens"]. Nothing is
  silent: a nonzero nonfinite_tokens is the caller's alarm.
- log ratios are clamped to +-max_abs_log_ratio (default 20, as verl does)
  before exp, so a sequence-level ratio cannot overflow; gradient is zero
  beyond the clamp.
- A batch with no masked-in tokens returns loss_sum = 0, count = 0 and zero
  gradients.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from kernels.aggregation import aggregation_weights, check_aggregation

LOSS_TYPES = ("ppo_clip", "cispo")
RATIO_LEVELS = ("token", "sequence", "sequence_mean")
CISPO_WEIGHTS = ("clip", "abs_cap")


@dataclasses.dataclass(frozen=True)
class PolicyLossConfig:
    """What loss, which clip convention, which aggregation.

    loss_type: "ppo_clip" (split-GRPO actor, Eq. 4-5) or "cispo" (extractor, Eq. 3).
    eps_low, eps_high: clip range [1 - eps_low, 1 + eps_high]. eps_low >= 1
      means no lower bound (MiniMax-M1 CISPO leaves it off).
    dual_clip: PPO dual-clip constant c > 1 (for A < 0 the loss is capped at
      -c * A); None turns it off. PPO only.
    ratio_level: "token" (released config: rho_t = pi/pi_old per token),
      "sequence" (paper text: the trajectory ratio exp(sum_t log rho_t), shared
      by every token of the sequence) or "sequence_mean" (GSPO's length-
      normalised exp(mean_t log rho_t)). PPO only; CISPO is token-level.
    cispo_weight: "clip" (paper/MiniMax: clip(rho, 1-eps_low, 1+eps_high)) or
      "abs_cap" (TRL / ms-swift: min(rho, cispo_abs_cap)).
    cispo_abs_cap: the cap for cispo_weight="abs_cap".
    unified_mask: CISPO only; MiniMax-M1 Eq. 7 token mask (see cispo_unified_mask).
    aggregation: one of kernels.aggregation.AGGREGATION_MODES.
    norm_constant: L for "seq-mean-token-sum-norm" (e.g. max generation length).
    max_abs_log_ratio: clamp on log rho before exp; None disables.
    """

    loss_type: str = "ppo_clip"
    """ppo_clip (split-GRPO actor, Eq. 4-5) or cispo (extractor, Eq. 3)."""
    eps_low: float = 0.2
    """Clip range low side: ratios below 1 - eps_low are clipped."""
    eps_high: float = 0.2
    """Clip range high side: ratios above 1 + eps_high are clipped."""
    dual_clip: float | None = None
    """PPO dual-clip constant c > 1 (caps the loss for A < 0); None = off."""
    ratio_level: str = "token"
    """token (rho per token, released code) or sequence (trajectory ratio, paper)."""
    cispo_weight: str = "clip"
    """CISPO weight: clip (paper) or abs_cap (min(rho, cispo_abs_cap))."""
    cispo_abs_cap: float = 5.0
    """The cap for cispo_weight=abs_cap."""
    unified_mask: bool = False
    """CISPO only: MiniMax-M1 Eq. 7 token mask."""
    aggregation: str = "token-mean"
    """Loss aggregation over tokens and sequences (kernels.aggregation)."""
    norm_constant: float | None = None
    """L for seq-mean-token-sum-norm (e.g. the longest generation)."""
    max_abs_log_ratio: float | None = 20.0
    """Clamp on log rho before exp; None = off."""

    def __post_init__(self):
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}; got {self.loss_type!r}")
        for name in ("eps_low", "eps_high"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
        if self.ratio_level not in RATIO_LEVELS:
            raise ValueError(f"ratio_level must be one of {RATIO_LEVELS}; got {self.ratio_level!r}")
        if self.cispo_weight not in CISPO_WEIGHTS:
            raise ValueError(
                f"cispo_weight must be one of {CISPO_WEIGHTS}; got {self.cispo_weight!r}")
        if not np.isfinite(self.cispo_abs_cap) or self.cispo_abs_cap <= 0:
            raise ValueError(
                f"cispo_abs_cap must be a finite number > 0; got {self.cispo_abs_cap!r}")
        if self.max_abs_log_ratio is not None and not self.max_abs_log_ratio > 0:
            raise ValueError(
                f"max_abs_log_ratio must be > 0 or None; got {self.max_abs_log_ratio!r}")
        check_aggregation(self.aggregation, self.norm_constant)
        if self.loss_type == "ppo_clip":
            if self.dual_clip is not None and not (np.isfinite(self.dual_clip)
                                                   and self.dual_clip > 1):
                raise ValueError(f"dual_clip must be a finite number > 1 or None; got "
                                 f"{self.dual_clip!r}")
            if self.unified_mask:
                raise ValueError("unified_mask is a CISPO option (MiniMax-M1 Eq. 7); "
                                 "PPO-clip already zeroes those tokens' gradient")
        else:
            if self.dual_clip is not None:
                raise ValueError("dual_clip is a PPO-clip option; CISPO takes dual_clip=None")
            if self.ratio_level != "token":
                raise ValueError(f"CISPO uses token-level ratios (ratio_level='token'); "
                                 f"got {self.ratio_level!r}")

    @property
    def clip_low(self) -> float:
        return 1.0 - self.eps_low

    @property
    def clip_high(self) -> float:
        return 1.0 + self.eps_high

    @classmethod
    def split_grpo_paper(cls, **overrides) -> "PolicyLossConfig":
        """Paper text: trajectory-level ratio, mean over rollouts, eps 0.2."""
        return cls(**{"loss_type": "ppo_clip", "ratio_level": "sequence",
                      "aggregation": "seq-mean-token-mean", **overrides})

    @classmethod
    def split_grpo_released(cls, **overrides) -> "PolicyLossConfig":
        """Released config: token-level ratio, seq-mean-token-mean, eps 0.2."""
        return cls(**{"loss_type": "ppo_clip", "ratio_level": "token",
                      "aggregation": "seq-mean-token-mean", **overrides})

    @classmethod
    def cispo_paper(cls, **overrides) -> "PolicyLossConfig":
        """Paper Eq. 3: eps_low = eps_high = 0.1, normalised by all tokens."""
        return cls(**{"loss_type": "cispo", "eps_low": 0.1, "eps_high": 0.1,
                      "aggregation": "token-mean", **overrides})

    @classmethod
    def cispo_released(cls, **overrides) -> "PolicyLossConfig":
        """Released code: CISPO 0.1 / 0.1 averaged per sequence, then over
        sequences (its `memory_loss_agg_mode` default, seq-mean-token-mean)."""
        return cls.cispo_paper(**{"aggregation": "seq-mean-token-mean", **overrides})


class LossOutput(NamedTuple):
    loss_sum: jax.Array
    count: jax.Array
    diagnostics: dict


def clamp_log_ratio(log_ratio, config: PolicyLossConfig):
    if config.max_abs_log_ratio is None:
        return log_ratio
    return jnp.clip(log_ratio, -config.max_abs_log_ratio, config.max_abs_log_ratio)


def ppo_clip_token_loss(log_ratio, advantages, config: PolicyLossConfig):
    """Per-token negated clipped surrogate, paper Eq. 4-5 (L_clip of split-GRPO):

        -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A),  rho = exp(log_ratio)

    with optional dual clip (A < 0: the loss is at most -c * A). The gradient
    is exactly zero where the clipped branch binds. The subgroup-wise
    advantages A_c of Eq. 5 are computed by the caller.
    """
    ratio = jnp.exp(clamp_log_ratio(log_ratio, config))
    clipped = jnp.clip(ratio, config.clip_low, config.clip_high)
    loss = jnp.maximum(-ratio * advantages, -clipped * advantages)
    if config.dual_clip is not None:
        loss = jnp.where(advantages < 0,
                         jnp.minimum(loss, -config.dual_clip * advantages), loss)
    return loss


def cispo_weight(ratio, config: PolicyLossConfig):
    """The importance weight of CISPO before stop-gradient: the paper's
    clip(rho, 1-eps_low, 1+eps_high), or TRL's absolute cap min(rho, cap)."""
    if config.cispo_weight == "abs_cap":
        return jnp.minimum(ratio, config.cispo_abs_cap)
    return jnp.clip(ratio, config.clip_low, config.clip_high)


def cispo_unified_mask(ratio, advantages, config: PolicyLossConfig):
    """MiniMax-M1 Eq. 7: 0 for tokens with A > 0 and rho > 1 + eps_high, or
    A < 0 and rho < 1 - eps_low (PPO's trust region as a token mask), else 1."""
    drop = ((advantages > 0) & (ratio > config.clip_high)) | (
        (advantages < 0) & (ratio < config.clip_low))
    return jnp.where(drop, 0.0, 1.0)


def cispo_token_loss(logprobs, log_ratio, advantages, config: PolicyLossConfig):
    """Per-token negated CISPO objective, paper Eq. 3 (MiniMax-M1 Eq. 4):

        -sg(clip(rho, 1 - eps_low, 1 + eps_high)) * A * log pi(token)

    The clipped weight is detached, so the gradient is weight * A * d log pi
    for every token, including those whose ratio is clipped.
    """
    ratio = jnp.exp(clamp_log_ratio(log_ratio, config))
    weight = jax.lax.stop_gradient(cispo_weight(ratio, config))
    if config.unified_mask:
        weight = weight * jax.lax.stop_gradient(cispo_unified_mask(ratio, advantages, config))
    return -weight * advantages * logprobs


def token_loss(logprobs, old_logprobs, advantages, config: PolicyLossConfig):
    """Elementwise per-token loss for token-level ratios (the form the fused
    one-pass kernel differentiates per token)."""
    if config.ratio_level != "token":
        raise ValueError("token_loss needs ratio_level='token'")
    log_ratio = logprobs - old_logprobs
    if config.loss_type == "cispo":
        return cispo_token_loss(logprobs, log_ratio, advantages, config)
    return ppo_clip_token_loss(log_ratio, advantages, config)


def check_loss_shapes(logprobs, old_logprobs, advantages, mask):
    """Raises ValueError unless the loss inputs are [B, T] (advantages [B, T] or [B])."""
    if logprobs.ndim != 2:
        raise ValueError(f"logprobs must be [B, T] (sequences x tokens); got {logprobs.shape}")
    for name, arr in (("old_logprobs", old_logprobs), ("mask", mask)):
        if arr.shape != logprobs.shape:
            raise ValueError(f"{name} must have logprobs' shape {logprobs.shape}; got {arr.shape}")
    if advantages.shape not in (logprobs.shape, logprobs.shape[:1]):
        raise ValueError(f"advantages must be [B, T] or [B] with logprobs {logprobs.shape}; "
                         f"got {advantages.shape}")


def sanitize_inputs(logprobs, old_logprobs, advantages, mask):
    """Broadcasts [B] advantages to [B, T] and selects away masked-out and
    non-finite tokens. Returns (logprobs, old_logprobs, advantages, valid,
    nonfinite) with zeros at invalid positions; valid is bool [B, T]."""
    check_loss_shapes(logprobs, old_logprobs, advantages, mask)
    advantages = jnp.broadcast_to(
        advantages[:, None] if advantages.ndim == 1 else advantages, logprobs.shape)
    advantages = advantages.astype(jnp.float32)
    in_mask = mask != 0
    finite = jnp.isfinite(logprobs) & jnp.isfinite(old_logprobs) & jnp.isfinite(advantages)
    valid = in_mask & finite
    nonfinite = jnp.sum(in_mask & ~finite)
    zero = lambda x: jnp.where(valid, x.astype(jnp.float32), 0.0)  # noqa: E731
    return zero(logprobs), zero(old_logprobs), zero(advantages), valid, nonfinite


def _log_ratio(logprobs, old_logprobs, valid, ratio_level):
    token = jnp.where(valid, logprobs - old_logprobs, 0.0)
    if ratio_level == "token":
        return token
    per_seq = token.sum(axis=-1, keepdims=True)
    if ratio_level == "sequence_mean":
        per_seq = per_seq / jnp.maximum(valid.sum(axis=-1, keepdims=True), 1)
    return jnp.broadcast_to(per_seq, token.shape)


def loss_diagnostics(logprobs, old_logprobs, advantages, valid, log_ratio, mask,
                     nonfinite, config: PolicyLossConfig, entropy=None):
    """Token means over valid tokens (0 when there are none), all stop-gradient:
    clip_frac_low/high (where the clip binds: PPO - the clipped branch is
    chosen; CISPO - the weight is clipped), dual_clip_frac, unified_mask_frac,
    ratio_mean/min/max (of the ratio the loss uses), approx_kl (per-token k3
    estimate of KL(old || new): rho - 1 - log rho), entropy_mean,
    masked_fraction (positions that do not contribute), nonfinite_tokens,
    num_tokens."""
    sg = jax.lax.stop_gradient
    log_ratio, advantages = sg(log_ratio), sg(advantages)
    clamped = clamp_log_ratio(log_ratio, config)
    ratio = jnp.exp(clamped)
    # KL is a per-token quantity whatever ratio the loss uses.
    token_log_ratio = clamp_log_ratio(sg(jnp.where(valid, logprobs - old_logprobs, 0.0)), config)
    n = valid.sum().astype(jnp.float32)
    mean = lambda x: jnp.sum(jnp.where(valid, x, 0.0)) / jnp.maximum(n, 1.0)  # noqa: E731
    above, below = ratio > config.clip_high, ratio < config.clip_low
    if config.loss_type == "ppo_clip":
        high, low = above & (advantages > 0), below & (advantages < 0)
    elif config.cispo_weight == "abs_cap":
        high, low = ratio > config.cispo_abs_cap, jnp.zeros_like(valid)
    else:
        high, low = above, below
    out = {
        "clip_frac_low": mean(low), "clip_frac_high": mean(high),
        "ratio_mean": mean(ratio),
        "ratio_min": jnp.where(n > 0, jnp.min(jnp.where(valid, ratio, jnp.inf)), 0.0),
        "ratio_max": jnp.where(n > 0, jnp.max(jnp.where(valid, ratio, -jnp.inf)), 0.0),
        "approx_kl": mean(jnp.expm1(token_log_ratio) - token_log_ratio),
        "masked_fraction": 1.0 - n / max(int(np.prod(mask.shape)), 1),
        "nonfinite_tokens": nonfinite.astype(jnp.float32),
        "num_tokens": n,
    }
    if config.loss_type == "ppo_clip" and config.dual_clip is not None:
        out["dual_clip_frac"] = mean((advantages < 0) & (ratio > config.dual_clip))
    if config.loss_type == "cispo" and config.unified_mask:
        out["unified_mask_frac"] = mean(cispo_unified_mask(ratio, advantages, config) == 0)
    if entropy is not None:
        out["entropy_mean"] = mean(jnp.where(valid, sg(entropy), 0.0))
    return out


def policy_loss(logprobs, old_logprobs, advantages, mask, config: PolicyLossConfig,
                entropy=None) -> LossOutput:
    """The configured loss on [B, T] log-probs: LossOutput(loss_sum, count, diagnostics).

    Args:
      logprobs: [B, T] current-policy log-probs (differentiable).
      old_logprobs: [B, T] behaviour-policy log-probs (treated as data).
      advantages: [B, T] or [B] (treated as data).
      mask: [B, T], nonzero where a token is trained on (actor tokens).
      config: PolicyLossConfig.
      entropy: optional [B, T] per-token entropy, for diagnostics only.
    """
    lp, old, adv, valid, nonfinite = sanitize_inputs(logprobs, old_logprobs, advantages, mask)
    log_ratio = _log_ratio(lp, old, valid, config.ratio_level)
    if config.loss_type == "cispo":
        per_token = cispo_token_loss(lp, log_ratio, adv, config)
    else:
        per_token = ppo_clip_token_loss(log_ratio, adv, config)
    weights, count = aggregation_weights(mask, config.aggregation, config.norm_constant)
    loss_sum = jnp.sum(jnp.where(valid, per_token * weights, 0.0))
    diagnostics = loss_diagnostics(lp, old, adv, valid, log_ratio, mask, nonfinite,
                                   config, entropy)
    return LossOutput(loss_sum, count, diagnostics)


def ppo_clip_loss(logprobs, old_logprobs, advantages, mask, config: PolicyLossConfig,
                  entropy=None) -> LossOutput:
    """policy_loss for a config with loss_type='ppo_clip' (split-GRPO actor)."""
    if config.loss_type != "ppo_clip":
        raise ValueError(f"ppo_clip_loss needs loss_type='ppo_clip'; got {config.loss_type!r}")
    return policy_loss(logprobs, old_logprobs, advantages, mask, config, entropy)


def cispo_loss(logprobs, old_logprobs, advantages, mask, config: PolicyLossConfig,
               entropy=None) -> LossOutput:
    """policy_loss for a config with loss_type='cispo' (extractor)."""
    if config.loss_type != "cispo":
        raise ValueError(f"cispo_loss needs loss_type='cispo'; got {config.loss_type!r}")
    return policy_loss(logprobs, old_logprobs, advantages, mask, config, entropy)
