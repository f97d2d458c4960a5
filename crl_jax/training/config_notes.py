"""What ``--print_config`` says beside a key: which keys the chosen profile
of a paper-scale preset set (they differ between its profiles), and which
keys the run ignores (a tiny model's sizes beside a checkpoint whose
config.json gives them, the fitted tokenizer's vocabulary beside a
checkpoint's tokenizer)."""
from __future__ import annotations

from crl_jax.training.config import RunConfig
from crl_jax.training.config_io import PresetCatalog, flatten_config

# ModelSpec fields a checkpoint's config.json overrides.
TINY_MODEL_KEYS = ("family", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                   "num_kv_heads", "head_dim")


def unused_keys(cfg: RunConfig) -> dict[str, str]:
    """{key: why the run ignores it}."""
    notes = {}
    for role in ("actor", "extractor"):
        spec = getattr(cfg, role)
        if spec.checkpoint:
            notes.update({f"{role}.{k}": f"unused: {role}.checkpoint's config.json sets it"
                          for k in TINY_MODEL_KEYS})
    if cfg.actor.checkpoint or cfg.actor.tokenizer:
        notes["warm_start.vocab_size"] = "unused: the actor reads its checkpoint's tokenizer"
        notes["warm_start.split_digits"] = notes["warm_start.vocab_size"]
    if not cfg.experience.has_extractor:
        notes.update({f"extractor.{k}": f"unused: experience.mode={cfg.experience.mode} has "
                      "no extractor" for k in ("checkpoint", "tokenizer", *TINY_MODEL_KEYS)})
    return notes


def profile_keys(presets: PresetCatalog, name: str, cfg: RunConfig) -> dict[str, str]:
    """{key: note} for the keys the profile of ``name`` (NAME or NAME:PROFILE)
    set in ``cfg``: those whose value differs between the preset's profiles
    (and that the command line left as the profile set them)."""
    base, _, profile = name.partition(":")
    profiles = presets.profiles(base)
    if not profiles:
        return {}
    profile = profile or profiles[0]
    flat = {p: flatten_config(presets.load(f"{base}:{p}")) for p in profiles}
    others = [p for p in profiles if p != profile]
    now = flatten_config(cfg)
    return {k: f"{profile} profile (" + ", ".join(f"{p}: {flat[p].get(k)!r}" for p in others) + ")"
            for k, v in flat[profile].items()
            if any(flat[p].get(k) != v for p in others) and now.get(k) == v}

