"""Straightforward float64 NumPy versions of the kernels, written from the
equations (PAPER.md sections 1-2) with explicit loops over sequences; the
tests compare the JAX kernels against these."""
from __future__ import annotations

import numpy as np


def logprobs_and_entropy(hidden, unembedding, targets, temperature=1.0):
    """log softmax(h W / T)[target] and the entropy, per token, in float64."""
    logits = np.asarray(hidden, np.float64) @ np.asarray(unembedding, np.float64) / temperature
    logits = logits - logits.max(axis=-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    lp = np.take_along_axis(log_probs, np.asarray(targets)[..., None], axis=-1)[..., 0]
    entropy = -(np.exp(log_probs) * log_probs).sum(axis=-1)
    return lp, entropy


def _clamp(x, limit):
    return x if limit is None else np.clip(x, -limit, limit)


def log_ratios(lp, old, mask, ratio_level, clamp=20.0):
    """Per-token log rho: token-level, or the sequence's sum / mean broadcast."""
    lp, old, mask = (np.asarray(a, np.float64) for a in (lp, old, mask))
    out = np.zeros_like(lp)
    for s in range(lp.shape[0]):
        valid = mask[s] != 0
        token = np.where(valid, lp[s] - old[s], 0.0)
        if ratio_level == "token":
            out[s] = token
        elif ratio_level == "sequence":
            out[s] = token.sum()
        else:
            out[s] = token.sum() / max(valid.sum(), 1)
    return _clamp(out, clamp)


def ppo_clip_per_token(log_ratio, adv, eps_low, eps_high, dual_clip=None):
    """-min(rho A, clip(rho, 1-eps_low, 1+eps_high) A); dual clip caps it at -c A for A < 0."""
    rho = np.exp(log_ratio)
    unclipped = rho * adv
    clipped = np.clip(rho, 1 - eps_low, 1 + eps_high) * adv
    loss = -np.minimum(unclipped, clipped)
    if dual_clip is not None:
        loss = np.where(adv < 0, np.minimum(loss, -dual_clip * adv), loss)
    return loss


def cispo_weight(log_ratio, eps_low, eps_high, abs_cap=None):
    rho = np.exp(log_ratio)
    if abs_cap is not None:
        return np.minimum(rho, abs_cap)
    return np.clip(rho, 1 - eps_low, 1 + eps_high)


def unified_mask(log_ratio, adv, eps_low, eps_high):
    rho = np.exp(log_ratio)
    drop = ((adv > 0) & (rho > 1 + eps_high)) | ((adv < 0) & (rho < 1 - eps_low))
    return np.where(drop, 0.0, 1.0)


def aggregate(per_token, mask, mode, norm_constant=None):
    """The final scalar loss, one sequence at a time (0 for an empty batch)."""
    per_token, mask = np.asarray(per_token, np.float64), np.asarray(mask) != 0
    if mode == "token-mean":
        n = mask.sum()
        return per_token[mask].sum() / n if n else 0.0
    seq_values = []
    for s in range(per_token.shape[0]):
        n_s = mask[s].sum()
        if n_s == 0:
            continue
        total = per_token[s][mask[s]].sum()
        if mode == "seq-mean-token-mean":
            seq_values.append(total / n_s)
        elif mode == "seq-mean-token-sum":
            seq_values.append(total)
        else:
            seq_values.append(total / norm_constant)
    return float(np.mean(seq_values)) if seq_values else 0.0


def per_token_loss(lp, old, adv, mask, cfg):
    """Per-token loss values (the stop-gradient only matters for gradients)."""
    lp, old = np.asarray(lp, np.float64), np.asarray(old, np.float64)
    adv = np.broadcast_to(np.asarray(adv, np.float64).reshape(lp.shape[0], -1), lp.shape)
    lr = log_ratios(lp, old, mask, cfg.ratio_level, cfg.max_abs_log_ratio)
    if cfg.loss_type == "ppo_clip":
        return ppo_clip_per_token(lr, adv, cfg.eps_low, cfg.eps_high, cfg.dual_clip)
    cap = cfg.cispo_abs_cap if cfg.cispo_weight == "abs_cap" else None
    w = cispo_weight(lr, cfg.eps_low, cfg.eps_high, cap)
    if cfg.unified_mask:
        w = w * unified_mask(lr, adv, cfg.eps_low, cfg.eps_high)
    return -w * adv * lp


def loss(lp, old, adv, mask, cfg):
    return aggregate(per_token_loss(lp, old, adv, mask, cfg), mask, cfg.aggregation,
                     cfg.norm_constant)


def cispo_grad(lp, old, adv, mask, cfg):
    """Hand-derived CISPO gradient w.r.t. lp: -w * A * (aggregation weight of the token)."""
    lp, old, mask = np.asarray(lp, np.float64), np.asarray(old, np.float64), np.asarray(mask)
    adv = np.broadcast_to(np.asarray(adv, np.float64).reshape(lp.shape[0], -1), lp.shape)
    lr = _clamp(lp - old, cfg.max_abs_log_ratio)
    cap = cfg.cispo_abs_cap if cfg.cispo_weight == "abs_cap" else None
    w = cispo_weight(lr, cfg.eps_low, cfg.eps_high, cap)
    if cfg.unified_mask:
        w = w * unified_mask(lr, adv, cfg.eps_low, cfg.eps_high)
    # d loss / d lp_t = -w_t A_t, times d aggregate / d per_token_t (a linear map).
    agg_grad = np.zeros_like(lp)
    for s in range(lp.shape[0]):
        for t in range(lp.shape[1]):
            unit = np.zeros_like(lp)
            unit[s, t] = 1.0
            agg_grad[s, t] = aggregate(unit, mask, cfg.aggregation, cfg.norm_constant)
    return np.where(mask != 0, -w * adv * agg_grad, 0.0)


def finite_difference_grad(fn, x, step=1e-6):
    """Central differences of a scalar float64 function of an array."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += step
        minus[idx] -= step
        grad[idx] = (fn(plus) - fn(minus)) / (2 * step)
    return grad
