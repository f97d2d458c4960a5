"""Test-wide set-up.

Eight fake CPU devices let the sharding tests build real meshes on a laptop.
The flag must be set before jax is first imported, hence here.
"""
import os
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Each Trainer a test builds jit-compiles the same small programs again; a
# persistent compilation cache shared by the whole session (and its
# subprocesses) serves the repeats: the trainer tests run in about half the time.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      os.path.join(tempfile.gettempdir(), "crl_jax_test_xla_cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
