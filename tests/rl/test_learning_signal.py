"""The policy update moves a policy the right way: a one-step bandit where
even token ids are rewarded, played with the real sampler and learner."""
import jax
import jax.numpy as jnp
import numpy as np

from crl_jax.rl.batch import Sample, pack_samples

from crl_jax.rl.learner import Learner, OptimConfig
from kernels.policy_losses import PolicyLossConfig
from models.config import tiny_config
from models.decoder import init_decoder
from models.sampler import Sampler
from models.sampling_ops import SamplingConfig

PROMPT = [5, 6, 7, 8]


def _even_mass(model) -> float:
    """Exact probability of an even first token after the prompt."""
    out = model(jnp.asarray([PROMPT]))
    logits = out[0] if isinstance(out, tuple) else out
    probs = jax.nn.softmax(logits[0, -1].astype(jnp.float32))
    return float(probs[0::2].sum())


def test_group_relative_updates_raise_the_rewarded_mass():
    model = init_decoder(tiny_config("qwen2"), seed=0)
    learner = Learner(model, OptimConfig(lr=3e-3, micro_batch=16),
                      PolicyLossConfig.split_grpo_released())
    sampler = Sampler(learner.model, pad_id=0)
    config = SamplingConfig(max_new_tokens=2, temperature=1.0)
    before = _even_mass(learner.model)
    for it in range(30):
        res = sampler.generate([PROMPT] * 32, config, rng=it)
        rewards = np.array([1.0 if t[0] % 2 == 0 else 0.0 for t in res.tokens])
        adv = rewards - rewards.mean()  # GRPO, mean only
        samples = [Sample(PROMPT + t, [0] * 4 + [1] * len(t), np.concatenate([np.zeros(4), lp]),
                          float(a)) for t, lp, a in zip(res.tokens, res.logprobs, adv)]
        learner.policy_step(pack_samples(samples, 0, 16))
        sampler.update_params(learner.model)
    after = _even_mass(learner.model)
    assert 0.3 < before < 0.7  # a random model: about half the mass on even ids
    assert after > before + 0.2, (before, after)
