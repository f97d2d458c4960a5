"""What a run costs in accelerator-hours: an estimate from token counts and
a roofline, not a measurement (no timing here ran on a GPU or TPU).

The dry run (``run.py --dry_run``) prints it beside its memory table and
the figure sweep's paper budget sums it per figure (BUILD.md, "Figures at
paper scale"). Device-hours are the busy time of every device a run uses: a phase
that takes t seconds on D devices costs t x D device-seconds. With weights
and KV cache sharded over the D devices, compute and memory traffic divide
by D, so the device-hours of a phase do not depend on the layout; the wall
time is about device-hours / devices when the two roles overlap.

Assumptions, each a parameter of ``Assumptions``:

- Every episode runs to its sequence budget (rollout.max_prompt_tokens), of
  which ``sampled_share`` is sampled tokens and the rest prompt and
  observations. Episodes that win early cost less, so this is a bound for
  the rollout and training tokens, not a forecast.
- Prompt tokens (prefill) and training run at ``compute_util`` of the
  accelerator's dense bf16 peak: 2 FLOPs per matmul weight and token
  forward, 4 more backward, 2 more again with rematerialisation, plus
  causal attention over half the sequence on average.
- Each sampled token is one decode step of all the batch's rows at once; a
  step takes the longer of its FLOPs at ``compute_util`` of peak and its
  memory traffic (the weights once, each row's KV cache at the mean
  context) at ``bandwidth_util`` of HBM bandwidth.
- The extractor (in the modes that distil during RL) makes one call per
  consolidated episode: its whole prompt budget
  (experience.extractor_max_prompt_tokens) and answer budget
  (extractor_max_new_tokens), and, where it learns, trains
  extractor_updates_per_step batches of bank.train_batch_size such samples
  a step. Search-and-ask calls, the merge, the embedder and an offline
  bank's one-off build are left out.
- Evaluations play every held-out task once per pass (with and without
  experience for arms that have it) and train nothing.
"""
from __future__ import annotations

import dataclasses

# Dense bf16 peak (FLOP/s) and HBM bandwidth (bytes/s), as sold.
ACCELERATORS = {"h100": (989e12, 3.35e12), "h200": (989e12, 4.8e12),
                "a100": (312e12, 2.04e12), "v5p": (459e12, 2.76e12)}
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclasses.dataclass(frozen=True)
class Assumptions:
    sampled_share: float = 0.5
    compute_util: float = 0.4
    bandwidth_util: float = 0.7


@dataclasses.dataclass(frozen=True)
class Shape:
    """What the cost of a token depends on, from a decoder's architecture."""

    matmul_params: int       # weights multiplied per token (layers and the output head)
    weight_bytes: int        # every weight, embedding included, in the parameter dtype
    kv_bytes_per_token: int  # the KV cache of one token over all layers
    attention_width: int     # layers x query heads x head size
    remat: bool

    @classmethod
    def of(cls, cfg, remat: bool) -> "Shape":
        """From a models.config.DecoderConfig."""
        d, hd, layers = cfg.hidden_size, cfg.head_dim, cfg.num_layers
        q, kv = cfg.num_heads * hd, cfg.num_kv_heads * hd
        per_layer = d * q + 2 * d * kv + q * d + 3 * d * cfg.intermediate_size
        head = cfg.vocab_size * d
        total = layers * per_layer + head + (0 if cfg.tie_embeddings else head)
        return cls(layers * per_layer + head, total * _BYTES[cfg.param_dtype],
                   2 * layers * kv * _BYTES[cfg.dtype], layers * q, remat)

    def forward_flops(self, tokens: float, context: float) -> float:
        """Forward FLOPs of ``tokens`` tokens attending over ``context`` tokens each."""
        return tokens * (2 * self.matmul_params + 4 * self.attention_width * context)

    def training_factor(self) -> int:
        return 4 if self.remat else 3  # forward + backward (+ the rematerialised forward)


def _compute_s(flops: float, peak: float, a: Assumptions) -> float:
    return flops / (peak * a.compute_util)


def _training_s(shape: Shape, rows: int, length: int, peak: float, a: Assumptions) -> float:
    """Seconds of training on ``rows`` sequences of ``length`` tokens."""
    return _compute_s(shape.training_factor() * shape.forward_flops(rows * length, length / 2),
                      peak, a)


def _decode_s(shape: Shape, rows: int, length: int, sampled: int, peak: float, bandwidth: float,
              a: Assumptions) -> float:
    context = length - sampled / 2  # the mean context of the sampled tokens
    flops = shape.forward_flops(rows, context)
    traffic = shape.weight_bytes + rows * context * shape.kv_bytes_per_token
    return sampled * max(_compute_s(flops, peak, a), traffic / (bandwidth * a.bandwidth_util))


def role_seconds(shape: Shape, rows: int, length: int, sampled: int, train: bool,
                 accelerator: str, a: Assumptions) -> float:
    """Device-seconds of ``rows`` sequences of ``length`` tokens, ``sampled``
    of them sampled, and of training on them when ``train``."""
    peak, bandwidth = ACCELERATORS[accelerator]
    prompt = _compute_s(shape.forward_flops(rows * (length - sampled), length / 2), peak, a)
    trained = _training_s(shape, rows, length, peak, a) if train else 0.0
    return prompt + trained + _decode_s(shape, rows, length, sampled, peak, bandwidth, a)


def evaluation_passes(cfg) -> int:
    """Held-out passes over the run: at step 0, every eval_every steps and at
    the end, each once without and (with a bank) once with experience."""
    t = cfg.train
    evals = (1 + t.steps // t.eval_every + (1 if t.steps % t.eval_every else 0)
             if t.eval_every else 0)
    return evals * (2 if cfg.experience.retrieves else 1)


def run_device_hours(cfg, actor, extractor, accelerator: str = "h100",
                     a: Assumptions = Assumptions()) -> dict[str, float]:
    """{"actor", "extractor", "total"}: device-hours of a whole run of
    ``cfg`` whose roles have these DecoderConfigs (extractor None: none)."""
    if accelerator not in ACCELERATORS:
        raise ValueError(f"accelerator={accelerator!r}; valid: {', '.join(ACCELERATORS)}")
    t, r, e = cfg.train, cfg.rollout, cfg.experience
    length = r.max_prompt_tokens
    sampled = int(length * a.sampled_share)
    episodes = t.tasks_per_step * t.group_size * len(cfg.env.names)
    held_out = evaluation_passes(cfg) * cfg.env.num_eval_tasks * len(cfg.env.names)
    shape = Shape.of(actor, cfg.actor.remat)
    actor_s = (t.steps * role_seconds(shape, episodes, length, sampled, e.trains_actor,
                                      accelerator, a)
               + role_seconds(shape, held_out, length, sampled, False, accelerator, a))
    extractor_s = 0.0
    if extractor is not None and e.has_extractor and not e.static_bank:
        x = Shape.of(extractor, cfg.extractor.remat)
        x_len = e.extractor_max_prompt_tokens + e.extractor_max_new_tokens
        calls = episodes * (e.guided_fraction if e.consolidate == "guided" else 1.0)
        trained = e.extractor_updates_per_step * e.bank.train_batch_size * e.trains_extractor
        extractor_s = t.steps * (
            role_seconds(x, max(1, round(calls)), x_len, e.extractor_max_new_tokens, False,
                         accelerator, a)
            + _training_s(x, trained, x_len, ACCELERATORS[accelerator][0], a))
    hours = {"actor": actor_s / 3600, "extractor": extractor_s / 3600}
    hours["total"] = hours["actor"] + hours["extractor"]
    return hours


def device_hours(cfg, accelerator: str = "h100", a: Assumptions = Assumptions()) -> dict[str, float]:
    """run_device_hours with the roles' architectures read as the dry run
    reads them (a checkpoint's config.json, else the published one)."""
    from crl_jax.training.dry_run import decoder_config
    vocab = cfg.warm_start.vocab_size
    actor = decoder_config(cfg.actor, vocab)
    extractor = decoder_config(cfg.extractor, vocab) if cfg.experience.has_extractor else None
    return run_device_hours(cfg, actor, extractor, accelerator, a)
