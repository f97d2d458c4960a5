"""A cache of warm starts (tokenizer + supervised weights of the tiny models).

Every arm of a comparison (baseline, Comp. RL, ablations) should start from
the same warm-started actor, and the warm start is the slowest part of a
short CPU run; with ``warm_start.cache_dir`` set, the first run of a setting
stores its tokenizer and weights under a key, the hash of everything that
shapes them (`WarmStartInputs`), and later runs with the same key load them
instead of training again (the warm_start.py script builds one ahead of a
run).

    <cache_dir>/<key>/tokenizer/...             the environment tokenizer
    <cache_dir>/<key>/actor.safetensors         parameters as named tensors
    <cache_dir>/<key>/extractor.safetensors     (when an extractor was trained)
    <cache_dir>/<key>/losses.json               the warm-start loss curves

Entries are written to a temporary directory and renamed, so a crash never
leaves a half-written entry behind.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile

import jax
import numpy as np
import safetensors.numpy

from crl_jax.envs.alfworld_households import GENERATION as HOUSEHOLDS_GENERATION
from crl_jax.training.config import ModelSpec, RunConfig, WarmStartSpec
from crl_jax.training.config_io import config_to_dict

WEIGHTS_SUFFIX = ".safetensors"


@dataclasses.dataclass(frozen=True)
class WarmStartInputs:
    """Everything that determines a warm start, and nothing else: the models'
    shapes, the games the expert demonstrates (pool, length cap, action
    parser), how a demonstration is rendered into prompts, and the warm
    start's own settings. RL settings, evaluation settings and the experience
    mode are not here: every arm of a comparison shares one warm start."""

    name: str
    actor: ModelSpec
    extractor: ModelSpec
    env_names: tuple[str, ...]
    train_split: str
    num_generated: int
    task_types: tuple[str, ...]
    room_size: str
    lenient_actions: bool
    seeded_clock: bool
    demo_turns: int  # the expert's turn cap (env.max_episode_steps or rollout.max_turns)
    prompt_format: str
    history: int
    list_actions: str
    obs_chars: int
    show_first_observation: bool
    warm_start: WarmStartSpec  # its cache_dir (a place, not a setting) blanked
    # The RL pool the demonstrations are kept off (train.task_pool with
    # train.pool_disjoint, else 0): another pool leaves other games to
    # demonstrate. Hashed only where it differs from the preset's own
    # (inputs_key), so the keys of runs on the preset's pool stay as before.
    demo_pool_excluded: int = 0
    # env.households, env.pool_households, env.home_rate and the households'
    # GENERATION: the games the warm start demonstrates (empty without
    # households, and then not hashed).
    households: tuple = ()
    # experience.sighting_places: how the extractor's warm-start prompts tag
    # sightings, as RL's do (hashed only when set, so earlier keys hold).
    sighting_places: bool = False


KEY_SCHEME = "ws7"  # bump when the warm-start code changes what the same inputs give
# Presets with these environments use a later scheme: their demonstrations
# changed where the others' did not (ws8: MiniHack rooms' guided demos follow
# the informed expert), so the others' warm starts and records stay current.
ENV_SCHEMES = (("MiniHack-Room-", "ws8"),)


def key_scheme(cfg: RunConfig) -> str:
    schemes = [scheme for prefix, scheme in ENV_SCHEMES
               if any(name.startswith(prefix) for name in cfg.env.names)]
    return max(schemes + [KEY_SCHEME], key=lambda s: int(s[2:]))


def warm_start_inputs(cfg: RunConfig) -> WarmStartInputs:
    e, r = cfg.env, cfg.rollout
    return WarmStartInputs(
        name=cfg.name, actor=cfg.actor, extractor=cfg.extractor, env_names=e.names,
        train_split=e.train_split, num_generated=e.num_generated, task_types=e.task_types,
        room_size=e.room_size, lenient_actions=e.lenient_actions, seeded_clock=e.seeded_clock,
        demo_turns=e.max_episode_steps or r.max_turns, prompt_format=r.format,
        history=r.history, list_actions=r.list_actions, obs_chars=r.obs_chars,
        show_first_observation=r.show_first_observation,
        warm_start=dataclasses.replace(cfg.warm_start, cache_dir=""),
        demo_pool_excluded=_pool_excluded(cfg),
        households=((e.households, e.pool_households, e.home_rate, HOUSEHOLDS_GENERATION)
                    if e.households else ()),
        sighting_places=cfg.experience.sighting_places)


def _pool_excluded(cfg: RunConfig) -> int:
    return cfg.train.task_pool if cfg.train.pool_disjoint else 0


# The RL pool each preset kept its demonstrations off when `demo_pool_excluded`
# joined the key: at that value it stays out of the hash, so every warm start
# made before keeps its key. A fact of the key's history, not a setting: a
# preset that changes its pool later gets new keys, as it should.
# tests/training/test_warm_cache.py checks it against today's presets.
PRESET_POOLS_AT_SCHEME = {"alfworld": 0, "alfworld_cpu": 16, "alfworld_households_cpu": 0, "minihack_room": 0,
                          "minihack_room_cpu": 16, "multitask3": 0, "multitask3_cpu": 8,
                          "multitask6": 0, "swe": 0, "swe_cpu": 0, "webshop": 0, "webshop_cpu": 0}


def _preset_pool_excluded(name: str) -> int | None:
    """The RL pool preset ``name`` (NAME or NAME:PROFILE) kept its
    demonstrations off; None when ``name`` is no preset (a config built in code)."""
    return PRESET_POOLS_AT_SCHEME.get(name.partition(":")[0])


# Warm-start settings that shape the extractor alone, at the values that
# leave its samples as before: the actor's demonstrations, its generator and
# the tokenizer read none of them, so runs that differ only here share one
# actor (``adopt_actor``), and arms without an extractor one record.
EXTRACTOR_ONLY_WARM_START = {"extractor_missteps": 0.0, "extractor_room_jitter": 0.0,
                             "extractor_writes_room": True, "extractor_wrong_picks": 0.0,
                             "extractor_reads_shown": False, "extractor_wanders": 0.0,
                             "extractor_actor_episodes": 0.0, "extractor_home_rate": -1.0,
                             "extractor_writes_evidence": False, "extractor_sightings": False,
                             "extractor_other_types": 0}

# Warm-start settings added after the current schemes, with the value that
# gives what the code gave before them: at that value they stay out of the
# hash, so the warm starts (and the records grown from them) stay current.
_ADDED_SINCE_SCHEME = {("warm_start", "judge_fraction"): 0.0, ("actor", "attention_chunk"): 0,
                       ("extractor", "attention_chunk"): 0,
                       ("warm_start", "guided_contrast"): False,
                       ("warm_start", "line_repeat"): 1, ("warm_start", "actor_lr_end"): 1.0,
                       **{("warm_start", k): v for k, v in EXTRACTOR_ONLY_WARM_START.items()}}


def actor_key(cfg: RunConfig) -> str:
    """The key of the entry that holds ``cfg``'s warm-started actor as first
    trained: ``cfg``'s, with the extractor-only settings at their neutral values."""
    return warm_start_key(extractor_neutral(cfg))


def extractor_neutral(cfg: RunConfig, **warm_start) -> RunConfig:
    """``cfg`` with the extractor-only warm-start settings at their neutral
    values (and ``warm_start``'s too), the sightings read by the goal's type
    alone, as an extractor so taught reads them, and tagged without their
    place: the actor's key holds no experience setting, but the config must
    stay valid."""
    return dataclasses.replace(
        cfg, warm_start=dataclasses.replace(cfg.warm_start, **warm_start,
                                            **EXTRACTOR_ONLY_WARM_START),
        experience=dataclasses.replace(cfg.experience, sightings_of="goal",
                                       sighting_places=False))


def warm_start_key(cfg: RunConfig) -> str:
    """<preset>-wsN-<hash of WarmStartInputs>: runs with the same inputs share the entry."""
    return inputs_key(warm_start_inputs(cfg), key_scheme(cfg))


def inputs_key(inputs: WarmStartInputs, scheme: str) -> str:
    """The cache key of ``inputs`` in key scheme ``scheme``."""
    fields = dataclasses.asdict(inputs)
    # Keys made before the field existed were all of runs on their preset's
    # pool: at that value it stays out of the hash.
    if inputs.demo_pool_excluded == _preset_pool_excluded(inputs.name):
        del fields["demo_pool_excluded"]
    if not inputs.households:
        del fields["households"]
    if not inputs.sighting_places:
        del fields["sighting_places"]
    for (section, name), neutral in _ADDED_SINCE_SCHEME.items():
        if fields[section][name] == neutral:
            del fields[section][name]
    blob = json.dumps(fields, sort_keys=True).encode()
    return f"{inputs.name}-{scheme}-{hashlib.sha256(blob).hexdigest()[:16]}"


# --- the key of runs recorded before WarmStartInputs (figure records) --------
# Those records hold a key of the older scheme, "<preset>-<hash>": the figure
# machinery checks a record against today's settings in the record's own
# scheme, so a record stays current until a setting it was made with changes.
_LEGACY_ADDED_LATER = {"env": {"seeded_clock": False, "households": 0, "pool_households": 0,
                               "drawn_households": 0, "unseen_households": 0, "home_rate": 0.5},
                       "warm_start": {"ask_fraction": 0.0, "split_digits": False}}
for (_section, _name), _neutral in _ADDED_SINCE_SCHEME.items():  # added later than both schemes
    _LEGACY_ADDED_LATER.setdefault(_section, {})[_name] = _neutral
_LEGACY_NOT_SHAPING = {"env": ("num_eval_tasks", "eval_split"), "warm_start": ("cache_dir",)}


def _legacy_shaping(section: str, spec) -> dict:
    later = _LEGACY_ADDED_LATER.get(section, {})
    return {k: v for k, v in config_to_dict(spec).items()
            if k not in _LEGACY_NOT_SHAPING.get(section, ()) and not (k in later and v == later[k])}


def legacy_warm_start_key(cfg: RunConfig) -> str:
    """The key scheme of records made before WarmStartInputs (version 5)."""
    r = cfg.rollout
    parts = {
        "actor": _legacy_shaping("actor", cfg.actor),
        "extractor": _legacy_shaping("extractor", cfg.extractor),
        "env": _legacy_shaping("env", cfg.env),
        "prompt": [r.format, r.history, r.list_actions, r.obs_chars, r.show_first_observation],
        "warm_start": _legacy_shaping("warm_start", cfg.warm_start), "version": 5,
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return f"{cfg.name}-{hashlib.sha256(blob).hexdigest()[:16]}"


def key_in_scheme_of(recorded: str, cfg: RunConfig) -> str:
    """Today's key for ``cfg`` in the scheme ``recorded`` was made with."""
    # "<preset>-wsN-<hash>" for any N is this scheme (an older N is simply not
    # today's key); the legacy scheme has no "wsN" part
    if re.fullmatch(r".+-[0-9a-f]{16}", recorded) and not re.search(r"-ws\d+-", recorded):
        return legacy_warm_start_key(cfg)
    return warm_start_key(cfg)


RECORD = "warm_start.json"  # in a run directory: the cache key it started from


def record_warm_start(run_dir: str, key: str) -> None:
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, RECORD), "w") as f:
        json.dump({"key": key}, f)


def recorded_warm_start(run_dir: str) -> str | None:
    """The warm-start key a run recorded, None for runs that predate the record."""
    path = os.path.join(run_dir, RECORD)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f).get("key")


def _named(params) -> dict[str, np.ndarray]:
    """The parameter tree as {path: array}, e.g. "layers/0/attn/q_proj/kernel/value"."""
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    return {"/".join(_key_name(k) for k in path): np.asarray(x) for path, x in flat}


def _key_name(key) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def save_params(params, path: str) -> None:
    """Parameters as named tensors (safetensors)."""
    safetensors.numpy.save_file(_named(params), path)


def _write_json(obj, path: str) -> None:
    with open(path, "w") as f:
        json.dump(obj, f)


def replace_file(folder: str, name: str, write) -> None:
    """Writes ``folder/name`` through a hidden temporary file (``write(path)``)
    renamed over it: readers see the old file or the new, never part of one."""
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp{os.path.splitext(name)[1]}")
    try:
        write(tmp)
        os.replace(tmp, os.path.join(folder, name))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_params(like, path: str):
    """The stored parameters, by name, in the tree structure, dtypes and
    shardings of ``like``; a missing, extra or misshapen tensor is an error
    (never a silent mix-up of two tensors of one shape)."""
    stored = safetensors.numpy.load_file(path)
    flat, treedef = jax.tree_util.tree_flatten_with_path(like)
    names = ["/".join(_key_name(k) for k in p) for p, _ in flat]
    missing, extra = sorted(set(names) - set(stored)), sorted(set(stored) - set(names))
    bad = [n for n, (_, ref) in zip(names, flat) if n in stored and stored[n].shape != ref.shape]
    if missing or extra or bad:
        raise ValueError(f"warm-start cache entry {path} does not match the model: missing "
                         f"{missing[:3]}, unexpected {extra[:3]}, other shapes {bad[:3]}")
    placed = [jax.device_put(stored[n].astype(ref.dtype), ref.sharding)
              for n, (_, ref) in zip(names, flat)]
    return jax.tree_util.tree_unflatten(treedef, placed)


@dataclasses.dataclass
class WarmStartCache:
    root: str
    key: str

    @property
    def path(self) -> str:
        return os.path.join(self.root, self.key)

    def has(self, name: str) -> bool:
        return os.path.exists(self.weights(name))

    def weights(self, name: str) -> str:
        return os.path.join(self.path, f"{name}{WEIGHTS_SUFFIX}")

    def tokenizer_dir(self) -> str | None:
        d = os.path.join(self.path, "tokenizer")
        return d if os.path.isdir(d) else None

    def losses(self) -> dict:
        p = os.path.join(self.path, "losses.json")
        if not os.path.exists(p):
            return {}
        with open(p) as f:
            return json.load(f)

    def store(self, tokenizer_dir: str, weights: dict, losses: dict) -> None:
        """Adds ``weights`` (name -> params) to the entry. A new entry appears
        whole (built aside, then renamed into place); an existing one gains
        each file by an atomic rename, so an arm loading the actor while this
        run adds the extractor never finds the entry missing."""
        os.makedirs(self.root, exist_ok=True)
        merged = {**self.losses(), **{k: [float(x) for x in v] for k, v in losses.items()}}
        if os.path.isdir(self.path):
            for name, params in weights.items():
                replace_file(self.path, f"{name}{WEIGHTS_SUFFIX}",
                              lambda p, w=params: save_params(w, p))
            replace_file(self.path, "losses.json", lambda p: _write_json(merged, p))
            return
        tmp = tempfile.mkdtemp(prefix=f".{self.key}.", dir=self.root)
        try:
            shutil.copytree(tokenizer_dir, os.path.join(tmp, "tokenizer"))
            for name, params in weights.items():
                save_params(params, os.path.join(tmp, f"{name}{WEIGHTS_SUFFIX}"))
            _write_json(merged, os.path.join(tmp, "losses.json"))
            try:
                os.replace(tmp, self.path)
            except OSError:
                if not os.path.isdir(self.path):
                    raise
                self.store(tokenizer_dir, weights, losses)  # another run made the entry meanwhile
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def adopt_actor(cache: WarmStartCache, key: str) -> bool:
    """Starts ``cache``'s entry with the tokenizer and actor of entry ``key``
    (``actor_key``: the same actor, trained from the same inputs) when the
    entry has no actor and that one has, so a run that changes only how the
    extractor is taught trains the extractor alone. Returns whether it did.
    Safe when several processes try at once: the entry appears whole or not."""
    source = WarmStartCache(cache.root, key)
    if key == cache.key or cache.has("actor") or not (source.has("actor") and source.tokenizer_dir()):
        return False
    if os.path.isdir(cache.path):  # an entry without an actor: add it
        replace_file(cache.path, f"actor{WEIGHTS_SUFFIX}",
                      lambda p: shutil.copyfile(source.weights("actor"), p))
        return True
    tmp = tempfile.mkdtemp(prefix=f".{cache.key}.", dir=cache.root)
    try:
        shutil.copytree(source.tokenizer_dir(), os.path.join(tmp, "tokenizer"))
        shutil.copyfile(source.weights("actor"), os.path.join(tmp, f"actor{WEIGHTS_SUFFIX}"))
        _write_json({k: v for k, v in source.losses().items() if k == "actor"},
                    os.path.join(tmp, "losses.json"))
        try:
            os.replace(tmp, cache.path)
        except OSError:
            if not os.path.isdir(cache.path):
                raise
            return False  # another process made the entry meanwhile
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True
