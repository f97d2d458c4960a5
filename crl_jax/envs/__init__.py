"""Text environments: the common protocol, ALFWorld (real and fast engines),
MiniHack, WebShop (re-implemented), Sokoban, and a batched worker pool."""
from crl_jax.envs.base import StepInfo, StepResult, TextEnv

__all__ = ["StepInfo", "StepResult", "TextEnv"]
