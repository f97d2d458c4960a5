"""The kernel benchmark's loss cases and its CPU limit (the numbers it
prints are ratios of a run, not tested here)."""
import jax.numpy as jnp
import pytest

from experiments.benchmarks import bench_kernels


@pytest.mark.parametrize("loss", ["ppo", "cispo"])
def test_each_loss_case_agrees_between_the_naive_and_fused_kernels(loss):
    row = bench_kernels.run_shape(64, 16, 512, 32, jnp.float32, 1, ["naive", "fused"], loss)
    assert row["loss"] == loss
    naive = row["variants"]["naive"]["loss_sum"]
    assert row["fused_minus_naive_loss"] == pytest.approx(0.0, abs=1e-4 * max(1.0, abs(naive)))


def test_the_cases_are_different_losses():
    ppo, cispo = (bench_kernels.run_shape(64, 16, 512, 32, jnp.float32, 1, ["naive"], loss)
                  for loss in ("ppo", "cispo"))
    assert ppo["variants"]["naive"]["loss_sum"] != cispo["variants"]["naive"]["loss_sum"]


def test_accelerator_shapes_are_skipped_on_cpu_with_the_reason():
    for n, d, v, _ in bench_kernels.ACCELERATOR_SHAPES:
        why = bench_kernels.skipped_on_cpu(n, v)
        assert why and f"{n} x {v}" in why and "GPU or TPU" in why
    for n, d, v, _ in bench_kernels.FULL_SHAPES:
        assert bench_kernels.skipped_on_cpu(n, v) is None
