"""PPO-clip and CISPO losses against the float64 NumPy reference: values in
every aggregation mode, gradients by finite differences (PPO) or the
hand-derived CISPO identity, and the guard rails."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels import (AGGREGATION_MODES, PolicyLossConfig, cispo_loss, loss_from_sum_count,
                     policy_loss, ppo_clip_loss)
from tests.kernels import numpy_reference as ref

B, T = 4, 6


def _batch(seed=0, per_token_adv=False):
    rng = np.random.default_rng(seed)
    lp = -rng.uniform(0.1, 3.0, size=(B, T))
    old = lp + rng.normal(scale=0.4, size=(B, T))  # ratios ~0.5-2: clips bind both ways
    adv = rng.normal(size=(B, T) if per_token_adv else (B,))
    mask = np.ones((B, T))
    mask[0, 4:] = 0   # right padding
    mask[1, :2] = 0   # prompt tokens
    mask[2] = 0       # a sequence without trained tokens
    mask[3, 3] = 0
    return lp, old, adv, mask


def _loss_and_grad(cfg, lp, old, adv, mask, fn=policy_loss):
    def value(x):
        out = fn(x, jnp.asarray(old, jnp.float32), jnp.asarray(adv, jnp.float32),
                 jnp.asarray(mask), cfg)
        return loss_from_sum_count(out.loss_sum, out.count), out
    (loss, out), grad = jax.value_and_grad(value, has_aux=True)(jnp.asarray(lp, jnp.float32))
    return float(loss), np.asarray(grad, np.float64), out


NORM = {"seq-mean-token-sum-norm": 8.0}

PPO_VARIANTS = [
    dict(),
    dict(eps_low=0.1, eps_high=0.28),
    dict(dual_clip=1.5),
    dict(ratio_level="sequence", max_abs_log_ratio=20.0),
    dict(ratio_level="sequence_mean"),
]


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@pytest.mark.parametrize("variant", range(len(PPO_VARIANTS)))
def test_ppo_clip_value_and_gradient_match_reference(mode, variant):
    cfg = PolicyLossConfig(aggregation=mode, norm_constant=NORM.get(mode), **PPO_VARIANTS[variant])
    lp, old, adv, mask = _batch(seed=variant, per_token_adv=variant % 2 == 1)
    loss, grad, _ = _loss_and_grad(cfg, lp, old, adv, mask, ppo_clip_loss)
    np.testing.assert_allclose(loss, ref.loss(lp, old, adv, mask, cfg), rtol=1e-5, atol=1e-6)
    want = ref.finite_difference_grad(lambda x: ref.loss(x, old, adv, mask, cfg), lp)
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-6)


CISPO_VARIANTS = [
    dict(),
    dict(eps_low=1.0, eps_high=0.28),          # MiniMax-M1: no lower bound
    dict(cispo_weight="abs_cap", cispo_abs_cap=1.3),
    dict(unified_mask=True),
]


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@pytest.mark.parametrize("variant", range(len(CISPO_VARIANTS)))
def test_cispo_value_and_gradient_identity(mode, variant):
    cfg = PolicyLossConfig.cispo_paper(aggregation=mode, norm_constant=NORM.get(mode),
                                       **CISPO_VARIANTS[variant])
    lp, old, adv, mask = _batch(seed=10 + variant, per_token_adv=variant % 2 == 0)
    loss, grad, _ = _loss_and_grad(cfg, lp, old, adv, mask, cispo_loss)
    np.testing.assert_allclose(loss, ref.loss(lp, old, adv, mask, cfg), rtol=1e-5, atol=1e-6)
    # Gradient = clipped weight * A * d lp: the weight itself carries no gradient.
    np.testing.assert_allclose(grad, ref.cispo_grad(lp, old, adv, mask, cfg),
                               rtol=1e-5, atol=1e-7)


def test_cispo_keeps_gradient_of_clipped_tokens_where_ppo_zeroes_it():
    lp, old, adv, mask = _batch(seed=3, per_token_adv=True)
    ratio = np.exp(lp - old)
    eps = 0.2
    binds = (mask != 0) & (((adv > 0) & (ratio > 1 + eps)) | ((adv < 0) & (ratio < 1 - eps)))
    free = (mask != 0) & (ratio > 1 - eps) & (ratio < 1 + eps)
    assert binds.sum() >= 2 and free.sum() >= 2, "test data must exercise both cases"
    _, ppo_grad, ppo_out = _loss_and_grad(PolicyLossConfig(eps_low=eps, eps_high=eps),
                                          lp, old, adv, mask)
    _, cispo_grad, _ = _loss_and_grad(
        PolicyLossConfig(loss_type="cispo", eps_low=eps, eps_high=eps), lp, old, adv, mask)
    assert np.all(ppo_grad[binds] == 0.0)          # exactly zero where the clip binds
    assert np.all(ppo_grad[free] != 0.0)
    assert np.all(cispo_grad[binds] != 0.0)        # CISPO still learns from them
    assert np.all(ppo_grad[mask == 0] == 0.0)
    # The diagnostics count exactly those tokens.
    n = (mask != 0).sum()
    high = ((mask != 0) & (adv > 0) & (ratio > 1 + eps)).sum() / n
    low = ((mask != 0) & (adv < 0) & (ratio < 1 - eps)).sum() / n
    np.testing.assert_allclose(ppo_out.diagnostics["clip_frac_high"], high, rtol=1e-6)
    np.testing.assert_allclose(ppo_out.diagnostics["clip_frac_low"], low, rtol=1e-6)


def test_diagnostics_match_numpy():
    lp, old, adv, mask = _batch(seed=4)
    entropy = np.random.default_rng(0).uniform(0, 2, size=(B, T))
    cfg = PolicyLossConfig(dual_clip=1.5)
    out = policy_loss(jnp.asarray(lp), jnp.asarray(old), jnp.asarray(adv), jnp.asarray(mask),
                      cfg, entropy=jnp.asarray(entropy))
    valid = mask != 0
    ratio = np.exp(lp - old)[valid]
    d = {k: float(v) for k, v in out.diagnostics.items()}
    np.testing.assert_allclose(d["ratio_mean"], ratio.mean(), rtol=1e-5)
    np.testing.assert_allclose(d["ratio_min"], ratio.min(), rtol=1e-5)
    np.testing.assert_allclose(d["ratio_max"], ratio.max(), rtol=1e-5)
    log_r = (lp - old)[valid]
    np.testing.assert_allclose(d["approx_kl"], np.mean(np.exp(log_r) - 1 - log_r), rtol=1e-4)
    np.testing.assert_allclose(d["entropy_mean"], entropy[valid].mean(), rtol=1e-5)
    np.testing.assert_allclose(d["masked_fraction"], 1 - valid.mean(), rtol=1e-6)
    a = np.broadcast_to(adv[:, None], (B, T))[valid]
    np.testing.assert_allclose(d["dual_clip_frac"], np.mean((a < 0) & (ratio > 1.5)), atol=1e-7)
    assert d["num_tokens"] == valid.sum() and d["nonfinite_tokens"] == 0


def test_nan_and_inf_are_dropped_reported_and_never_reach_the_gradient():
    lp, old, adv, mask = _batch(seed=5, per_token_adv=True)
    cfg = PolicyLossConfig(aggregation="seq-mean-token-mean")
    bad_lp, bad_old, bad_adv = lp.copy(), old.copy(), adv.copy()
    bad_lp[0, 5] = np.nan      # masked out: padding
    bad_old[1, 0] = np.inf     # masked out: prompt
    bad_lp[3, 1] = np.nan      # masked in: dropped and reported
    bad_adv[3, 2] = -np.inf    # masked in: dropped and reported
    loss, grad, out = _loss_and_grad(cfg, bad_lp, bad_old, bad_adv, mask)
    assert np.isfinite(loss) and np.isfinite(grad).all()
    assert float(out.diagnostics["nonfinite_tokens"]) == 2
    # Same as zeroing those tokens' loss while keeping them in the denominators.
    per_token = ref.per_token_loss(lp, old, adv, mask, cfg)
    per_token[3, 1] = per_token[3, 2] = 0.0
    np.testing.assert_allclose(loss, ref.aggregate(per_token, mask, cfg.aggregation),
                               rtol=1e-5)
    assert grad[3, 1] == 0.0 and grad[3, 2] == 0.0


@pytest.mark.parametrize("loss_type", ["ppo_clip", "cispo"])
def test_zero_token_batch_gives_zero_loss_and_zero_gradient(loss_type):
    lp, old, adv, _ = _batch()
    mask = np.zeros((B, T))
    cfg = PolicyLossConfig(loss_type=loss_type, aggregation="seq-mean-token-mean")
    loss, grad, out = _loss_and_grad(cfg, lp, old, adv, mask)
    assert float(out.loss_sum) == 0.0 and float(out.count) == 0.0 and loss == 0.0
    assert np.all(grad == 0.0)
    assert all(np.isfinite(float(v)) for v in out.diagnostics.values())


def test_huge_sequence_log_ratio_is_clamped_not_overflowed():
    lp, old, adv, mask = _batch()
    old = lp - 30.0  # sum over a sequence of 30 per token: exp would overflow
    loss, grad, _ = _loss_and_grad(PolicyLossConfig(ratio_level="sequence"), lp, old, adv, mask)
    assert np.isfinite(loss) and np.isfinite(grad).all()


def test_jit_matches_eager():
    lp, old, adv, mask = (jnp.asarray(x, jnp.float32) for x in _batch(seed=6))
    cfg = PolicyLossConfig.split_grpo_released()
    eager = policy_loss(lp, old, adv, mask, cfg)
    jitted = jax.jit(policy_loss, static_argnums=4)(lp, old, adv, mask, cfg)
    np.testing.assert_allclose(jitted.loss_sum, eager.loss_sum, rtol=1e-6)
    assert float(jitted.count) == float(eager.count) == 3.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(loss_type="grpo"), "loss_type"),
    (dict(eps_low=-0.1), "eps_low"),
    (dict(eps_high=float("nan")), "eps_high"),
    (dict(dual_clip=1.0), "dual_clip"),
    (dict(ratio_level="episode"), "ratio_level"),
    (dict(aggregation="mean"), "aggregation"),
    (dict(aggregation="seq-mean-token-sum-norm"), "norm_constant"),
    (dict(aggregation="token-mean", norm_constant=4.0), "norm_constant"),
    (dict(unified_mask=True), "unified_mask"),
    (dict(loss_type="cispo", ratio_level="sequence"), "token-level"),
    (dict(loss_type="cispo", dual_clip=2.0), "dual_clip"),
    (dict(loss_type="cispo", cispo_weight="cap"), "cispo_weight"),
    (dict(max_abs_log_ratio=0.0), "max_abs_log_ratio"),
])
def test_invalid_config_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PolicyLossConfig(**kwargs)


def test_config_is_frozen_and_presets_are_valid():
    cfg = PolicyLossConfig.split_grpo_paper()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.eps_low = 0.3
    assert cfg.ratio_level == "sequence"
    assert PolicyLossConfig.cispo_paper().clip_low == pytest.approx(0.9)


def test_wrong_loss_function_for_config_raises():
    lp, old, adv, mask = (jnp.asarray(x) for x in _batch())
    with pytest.raises(ValueError, match="cispo"):
        cispo_loss(lp, old, adv, mask, PolicyLossConfig())
    with pytest.raises(ValueError, match="shape"):
        policy_loss(lp, old[:, :3], adv, mask, PolicyLossConfig())
