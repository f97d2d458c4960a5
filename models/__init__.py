"""models: Flax NNX networks and their I/O (decoder LMs, embedding encoder,
KV-cache sampler, sharding rules, Hugging Face checkpoints, tokenizers).

Never imports crl_jax."""
