"""Test-wide set-up.

Eight fake CPU devices let the sharding tests build real meshes on a laptop.
The flag must be set before jax is first imported, hence here.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
