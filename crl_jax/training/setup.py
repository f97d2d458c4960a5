"""Builds what a run needs from its RunConfig: tokenizer, the two models on
their meshes, learners, samplers, the experience bank and manager."""
from __future__ import annotations

import logging
import os

import jax
import numpy as np
import optax

from crl_jax.training import warmstart
from crl_jax.training.checkpointing import RunCheckpointer
from crl_jax.experience import ExperienceBank, ExperienceManager, HashingEmbedder
from crl_jax.rl.batch import pack_samples
from crl_jax.rl.learner import Learner, OptimConfig
from crl_jax.training.config import ModelSpec, RunConfig
from crl_jax.training.logs import progress_bar
from models.checkpoint import load_checkpoint
from models.config import DecoderConfig
from models.decoder import init_decoder
from models.sharding import MeshConfig, make_mesh

log = logging.getLogger(__name__)


def role_devices(spec: str) -> list:
    devices = jax.devices()
    if spec == "all":
        return devices
    kind, _, n = spec.partition(":")
    if kind not in ("first", "last") or not n.isdigit() or not 0 < int(n) <= len(devices):
        raise ValueError(f"devices={spec!r}; valid: 'all', 'first:N', 'last:N' with "
                         f"1 <= N <= {len(devices)}")
    return devices[:int(n)] if kind == "first" else devices[-int(n):]


def role_mesh(spec: ModelSpec):
    return make_mesh(MeshConfig(spec.mesh_data, spec.mesh_fsdp, spec.mesh_tp),
                     role_devices(spec.devices))


def build_model(spec: ModelSpec, tokenizer, seed: int, mesh):
    """A checkpoint's decoder, or a tiny one sized for the tokenizer."""
    if spec.checkpoint:
        if not os.path.isdir(spec.checkpoint):
            raise FileNotFoundError(
                f"model checkpoint {spec.checkpoint!r} does not exist: pass a local Hugging Face "
                f"directory (config.json + safetensors); see BUILD.md 'Model checkpoints'")
        return load_checkpoint(spec.checkpoint, mesh=mesh, dtype=spec.dtype,
                               param_dtype=spec.param_dtype, scan_layers=spec.scan_layers,
                               remat=spec.remat, attention_chunk=spec.attention_chunk)
    cfg = DecoderConfig(
        family=spec.family, vocab_size=tokenizer.vocab_size, hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size, num_layers=spec.num_layers,
        num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads, head_dim=spec.head_dim,
        tie_embeddings=True, qk_norm=spec.family == "qwen3", qkv_bias=spec.family == "qwen2",
        eos_token_id=tokenizer.eos_id, pad_token_id=tokenizer.pad_id, dtype=spec.dtype,
        param_dtype=spec.param_dtype, scan_layers=spec.scan_layers, remat=spec.remat,
        attention_chunk=spec.attention_chunk)
    return init_decoder(cfg, seed=seed, mesh=mesh)


def load_tokenizer_for(spec: ModelSpec):
    from models.tokenizer import load_tokenizer
    path = spec.tokenizer or spec.checkpoint
    if not path:
        return None
    if not os.path.exists(path):
        what = "tokenizer" if spec.tokenizer else "model checkpoint"
        raise FileNotFoundError(
            f"{what} {path!r} does not exist: pass a local Hugging Face directory (config.json, "
            f"safetensors and tokenizer files), e.g. actor.checkpoint=/path/to/dir, or set "
            f"$CRL_CHECKPOINTS; see BUILD.md 'Model checkpoints'")
    return load_tokenizer(path)


def make_embedder(name: str):
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        from models.bert_encoder import TextEmbedder
        return TextEmbedder()
    # Paper scale: a decoder embedding checkpoint (Qwen3-Embedding layout).
    from models.decoder_embedder import DecoderEmbedder
    from models.tokenizer import load_tokenizer
    if not os.path.isdir(name):
        raise FileNotFoundError(f"experience.embedder={name!r}: not 'hashing', 'minilm' or a "
                                f"checkpoint directory")
    tok = load_tokenizer(name)
    return DecoderEmbedder.from_checkpoint(name, tok, append_id=tok.eos_id, pad_id=tok.pad_id)


WARM_SAVE_EVERY = 50  # SFT steps between saves of an unfinished warm start


def supervised_warm_start(learner: Learner, samples, lr: float, steps: int, batch: int,
                          pad_id: int, rng: np.random.Generator, label: str,
                          progress_dir: str | None = None, save_every: int | None = None,
                          lr_end: float = 1.0) -> list:
    """A few SFT steps at a warm-start learning rate (then the RL rate is restored).
    ``lr_end`` < 1: the rate falls along a cosine from ``lr`` to ``lr_end * lr``
    at the last step; 1: a constant rate.
    Shows a progress bar with the loss and an ETA (the warm start takes
    minutes on a CPU) and writes the loss every 20 steps to the run's log.

    With ``progress_dir``, parameters, optimizer moments, losses and ``rng``'s
    state are saved there every ``save_every`` steps (default WARM_SAVE_EVERY)
    and at the end, and a later call with the same directory (and the same
    samples) continues from the last save: a killed hour-long warm start
    loses minutes, and ends where an uninterrupted one does. The caller
    removes the directory once the weights are stored elsewhere."""
    if not samples or steps <= 0:
        return []
    rl_optim = learner.optim
    schedule = None if lr_end == 1.0 else optax.cosine_decay_schedule(lr, steps, alpha=lr_end)
    learner.reset_optimizer(OptimConfig(**{**rl_optim.__dict__, "lr": lr, "micro_batch": batch}),
                            schedule)
    losses, start, save_every = [], 0, save_every or WARM_SAVE_EVERY
    ckpt = RunCheckpointer(progress_dir, keep=1) if progress_dir else None
    try:
        if ckpt and ckpt.latest_step() is not None:
            got = ckpt.restore(targets={"params": learner.params, "opt": learner.opt_state})
            learner.params, learner.opt_state = got.trees["params"], got.trees["opt"]
            losses = list(got.host_state["losses"])
            rng.bit_generator.state = got.host_state["rng"]
            start = min(got.step, steps)
            log.info("warm start %s: continuing at step %d/%d from %s", label, start, steps,
                     progress_dir)
        bar = progress_bar(steps, f"warm start ({label}, SFT)", "step", initial=start)
        for i in range(start, steps):
            pick = rng.choice(len(samples), size=min(batch, len(samples)), replace=False)
            m = learner.sft_step(pack_samples([samples[j] for j in pick], pad_id, batch))
            losses.append(m["loss"])
            bar.update(1)
            bar.set_postfix(loss=f"{m['loss']:.3f}", refresh=False)
            if (i + 1) % 20 == 0 or i + 1 == steps:
                log.debug("warm start %s: step %d/%d, loss %.3f", label, i + 1, steps, m["loss"])
            if ckpt and ((i + 1) % save_every == 0 or i + 1 == steps):
                ckpt.save(i + 1, {"params": learner.params, "opt": learner.opt_state},
                          {"losses": [float(x) for x in losses], "rng": rng.bit_generator.state})
        bar.close()
    finally:
        if ckpt:
            ckpt.close()
    learner.reset_optimizer(rl_optim)
    return losses


def make_manager(cfg: RunConfig, extractor_agent, merger):
    if cfg.experience.sync and cfg.experience.bank.recency_clock != "steps":
        # checked here, not in the config: keys are set one section at a time
        raise ValueError("experience.sync=true needs experience.bank.recency_clock=steps: "
                         "Eq. 6 on the wall clock makes retrieval depend on timing")
    embedder = make_embedder(cfg.experience.embedder)
    bank = ExperienceBank(cfg.experience.bank, embedder.dim)
    return ExperienceManager(bank, embedder, extractor=extractor_agent, merger=merger,
                             config=cfg.experience.bank, seed=cfg.train.seed,
                             synchronous=cfg.experience.sync)


def dedup_merger(texts: list[str]) -> list[str]:
    """Merge decision for the tiny presets: keep one copy of entries that say
    the same thing (same text up to case and spacing), in order. The paper's
    merge asks the extractor (ExtractorAgent.merge, experience.merger="extractor")."""
    seen, out = set(), []
    for t in texts:
        key = " ".join(t.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def env_tokenizer(cfg: RunConfig, demos, out_dir: str):
    """A tokenizer fitted to the demonstrations' text (tiny models), saved in the run directory."""
    if not os.path.exists(os.path.join(out_dir, "tokenizer", "tokenizer.json")):
        log.info("fitting a %d-token tokenizer to the text of %d demonstrations",
                 cfg.warm_start.vocab_size, len(demos))
    return warmstart.train_env_tokenizer(demos, cfg.warm_start.vocab_size, out_dir,
                                         cfg.rollout.history, cfg.warm_start.split_digits)
