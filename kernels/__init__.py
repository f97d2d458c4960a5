"""kernels: jit-compiled pure functions on arrays (token log-probs, policy
losses, loss aggregation). Imports only jax and numpy."""
from kernels.aggregation import (AGGREGATION_MODES, aggregate, aggregation_weights,
                                 loss_from_sum_count)
from kernels.fused_loss import fused_policy_loss
from kernels.logprobs import default_chunk_size, naive_token_logprobs, token_logprobs
from kernels.policy_losses import (LossOutput, PolicyLossConfig, cispo_loss, cispo_token_loss,
                                   cispo_unified_mask, cispo_weight, policy_loss, ppo_clip_loss,
                                   ppo_clip_token_loss)

__all__ = [
    "AGGREGATION_MODES", "LossOutput", "PolicyLossConfig", "aggregate", "aggregation_weights",
    "cispo_loss", "cispo_token_loss", "cispo_unified_mask", "cispo_weight",
    "default_chunk_size", "fused_policy_loss", "loss_from_sum_count", "naive_token_logprobs",
    "policy_loss", "ppo_clip_loss", "ppo_clip_token_loss", "token_logprobs",
]
