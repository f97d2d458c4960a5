"""crl_jax: the host-side Complementary RL system (configs, environments,
rollouts, experience pipeline, advantages, trainer, checkpoints, metrics)."""
