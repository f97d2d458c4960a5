"""Run configurations on the command line and on disk, parsed by tyro.

The schema is the tree of frozen dataclasses in `crl_jax.training.config`;
presets are the modules of a package with a `get_config()`, read through a
`PresetCatalog` the entry points hand in. tyro reads every source of
settings against that schema (the command line, ``--train.steps=3``; code,
``apply_overrides(cfg, ["train.steps=3"])``; a saved config.json), so types,
choices and unknown keys are checked alike. Why tyro (BUILD.md says more):
it builds the command line from the dataclasses, takes each key's help from
its docstring, lists keys by section in ``--help``, suggests the closest key
for a typo and exits with status 2 on bad input.
"""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import importlib
import io
import json
import pkgutil
import re
import sys
import threading
import typing
from typing import Any, Mapping, Sequence, TypeVar

import tyro

ConfigT = TypeVar("ConfigT")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
# Config booleans take a value (--experience.search_and_ask=True), like every
# other key, so a saved config and an override read the same way.
TYRO_CONFIG = (tyro.conf.FlagConversionOff,)


class ConfigError(ValueError):
    """A bad preset, key, type or value; the message says what is valid."""


# --- presets ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PresetCatalog:
    """The presets of one package: each public module of it is a preset with a
    ``get_config()`` (``get_config(profile)`` where it has ``PROFILES``). The
    library names no package of presets: the entry points hand theirs in, so
    the library never imports the scripts that import it."""

    package: str

    def names(self) -> list[str]:
        """Preset names: the modules of the package (``_private`` ones excluded)."""
        paths = importlib.import_module(self.package).__path__
        return sorted(m.name for m in pkgutil.iter_modules(paths) if not m.name.startswith("_"))

    def module(self, name: str):
        return importlib.import_module(f"{self.package}.{name.partition(':')[0]}")

    def summary(self, name: str) -> str:
        """The first sentence of a preset module's docstring, on one line."""
        doc = " ".join((self.module(name).__doc__ or "").split())
        head, dot, _ = doc.partition(". ")
        return head + ("." if dot else "")

    def profiles(self, name: str) -> tuple[str, ...]:
        """A preset's named profiles (its module's ``PROFILES``, the default
        first), or () for a preset without any. ``--config=NAME:PROFILE`` picks one."""
        return tuple(getattr(self.module(name), "PROFILES", ()))

    def unknown_message(self, name: str) -> str | None:
        """None if ``name`` (NAME or NAME:PROFILE) is a preset, else a one-paragraph
        error naming the valid ones."""
        available = self.names()
        base, colon, profile = name.partition(":")
        if base not in available:
            close = difflib.get_close_matches(base, available, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            return f"Unknown preset {base!r}.{hint} Presets: {', '.join(available)}."
        if colon:
            profiles = self.profiles(base)
            if not profiles:
                return f"Preset {base!r} has no profiles (only the paper-scale presets do)."
            if profile not in profiles:
                return (f"Preset {base!r} has no profile {profile!r}. Profiles: "
                        f"{', '.join(profiles)} (the first is the default).")
        return None

    def load(self, name: str):
        """The RunConfig of preset ``name``: its module's ``get_config()``, or
        ``get_config(profile)`` for NAME:PROFILE."""
        message = self.unknown_message(name)
        if message:
            raise ConfigError(message)
        module = self.module(name)
        _, colon, profile = name.partition(":")
        return module.get_config(profile) if colon else module.get_config()


# --- keys and their types -----------------------------------------------------


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def leaf_types(cls: type, prefix: str = "") -> dict[str, Any]:
    """{"a.b.c": annotation} for every leaf of a config class, in declaration order."""
    out = {}
    for name, tp in _field_types(cls).items():
        if dataclasses.is_dataclass(tp):
            out.update(leaf_types(tp, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = tp
    return out


def _is_sequence(tp: Any) -> bool:
    return typing.get_origin(tp) in (tuple, list)


def _is_bool(tp: Any) -> bool:
    return tp is bool


def _bool_word(text: str) -> str:
    word = text.strip().lower()
    if word in _TRUE:
        return "True"
    if word in _FALSE:
        return "False"
    return text  # tyro names the valid values


def normalize_args(cls: type, args: Sequence[str]) -> list[str]:
    """Command-line words spelt as tyro wants them, as overrides spell them:
    ``--a.flag=true`` (or yes/1/on) becomes ``--a.flag=True``, and a
    sequence ``--a.items=x,y`` (or ``=["x", "y"]``) ``--a.items x y``."""
    types = leaf_types(cls)
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key.startswith("--") and key[2:] in types:
            out.extend(_override_words(cls, key[2:], value))
        else:
            out.append(arg)
    return out


def _override_words(cls: type, key: str, value: str) -> list[str]:
    """One ``key=value`` override as command-line words."""
    tp = leaf_types(cls).get(key)
    if _is_sequence(tp):
        text = value.strip()
        parts = json.loads(text) if text.startswith("[") else [p for p in text.split(",") if p]
        return [f"--{key}", *map(str, parts)]
    if _is_bool(tp):
        return [f"--{key}={_bool_word(value)}"]
    return [f"--{key}={value}"]


def _split_override(item: str) -> tuple[str, str]:
    key, sep, value = item.removeprefix("--").partition("=")
    if not sep or not key:
        raise ConfigError(f"Override {item!r} must look like 'section.key=value'.")
    return key, value


# --- parsing ------------------------------------------------------------------


def _plain(text: str) -> str:
    """tyro's boxed error as one paragraph of plain text."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"[\u2500-\u257f]|-{3,}|^\s*[|+]|[|+]\s*$", " ", line).strip()
        if line and not line.startswith("For full helptext") and not line.endswith("--help"):
            lines.append(line)
    return " ".join(lines)


# tyro and redirect_stderr are not thread-safe: two threads parsing at once
# (a figure sweep's jobs reading saved configs) mixed their arguments.
_PARSE_LOCK = threading.Lock()


def parse_args(cls: type[ConfigT], default: ConfigT, args: Sequence[str]) -> ConfigT:
    """``default`` with ``args`` (``--a.b=value`` words) applied, read by tyro
    one thread at a time; ConfigError (tyro's message, one paragraph) if bad."""
    err = io.StringIO()
    try:
        with _PARSE_LOCK, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return tyro.cli(cls, default=default, args=list(args), use_underscores=True,
                            config=TYRO_CONFIG)
    except SystemExit:
        raise ConfigError(_plain(err.getvalue()) or f"bad config arguments {list(args)}") from None


def moved_keys(cls: type) -> Mapping[str, str]:
    """{old key: new key} for the keys a config class has moved (its
    ``MOVED_KEYS`` class variable): saved configs with the old key still load,
    a command line with it gets an error that names the new one."""
    return getattr(cls, "MOVED_KEYS", {})


def _unknown_key(cls: type, key: str) -> ConfigError:
    if key in moved_keys(cls):
        return ConfigError(f"Config key {key!r} is now {moved_keys(cls)[key]!r}.")
    close = difflib.get_close_matches(key, list(leaf_types(cls)), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"Unknown config key {key!r}.{hint} `--help` lists every key.")


def _apply_words(cfg: ConfigT, words: Sequence[tuple[str, list[str]]]) -> ConfigT:
    """``cfg`` with (key, command-line words) applied. Each section is parsed
    by tyro on its own dataclass (a parser of the whole tree costs ~0.1 s,
    one section's ~4 ms, and the figure scripts resolve thousands of arms),
    then the tree is rebuilt, so every level's own checks run again."""
    leaves = leaf_types(type(cfg))
    sections: dict[tuple[str, ...], list[str]] = {}
    for key, args in words:
        if key not in leaves:
            raise _unknown_key(type(cfg), key)
        *path, name = key.split(".")
        prefix = f"--{key}"
        sections.setdefault(tuple(path), []).extend(
            f"--{name}{a[len(prefix):]}" if a.startswith(prefix) else a for a in args)
    updated: dict[tuple[str, ...], Any] = {}  # each section's node, parsed (its own checks run)
    try:
        for path, args in sections.items():
            node = functools.reduce(getattr, path, cfg)
            updated[path] = parse_args(type(node), node, args)
    except ConfigError as err:  # name the keys as the command line does: --section.key
        fields = {f.name for f in dataclasses.fields(type(node))}
        prefix = "".join(f"{p}." for p in path)
        text = re.sub(r"--([a-z_0-9]+)", lambda m: f"--{prefix}{m.group(1)}"
                      if m.group(1) in fields else m.group(0), str(err))
        raise ConfigError(text) from None
    except (TypeError, ValueError) as err:  # a section's own checks (__post_init__)
        raise ConfigError(str(err)) from None

    def rebuild(node, path: tuple[str, ...]):
        # Every section in at once, so checks across sections (RunConfig's)
        # see all the overrides whatever their order on the command line.
        node = updated.get(path, node)
        changes = {f.name: rebuild(getattr(node, f.name), (*path, f.name))
                   for f in dataclasses.fields(node)
                   if dataclasses.is_dataclass(getattr(node, f.name))
                   and any(p[:len(path) + 1] == (*path, f.name) for p in updated)}
        return dataclasses.replace(node, **changes) if changes else node

    try:
        return rebuild(cfg, ())
    except (TypeError, ValueError) as err:  # checks across sections
        raise ConfigError(str(err)) from None


@functools.lru_cache(maxsize=4096)
def _apply_cached(cfg, overrides: tuple[str, ...]):
    words = []
    for item in overrides:
        key, value = _split_override(item)
        words.append((key, _override_words(type(cfg), key, value)))
    return _apply_words(cfg, words)


def apply_overrides(cfg: ConfigT, overrides: Sequence[str]) -> ConfigT:
    """A copy of ``cfg`` with ``a.b=value`` overrides applied (later ones
    win). Configs are immutable, so results are cached."""
    if not overrides:
        return cfg
    return _apply_cached(cfg, tuple(overrides))


# --- json ---------------------------------------------------------------------


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """The config as nested plain dicts and lists (what config.json holds)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def flatten_config(cfg: Any) -> dict[str, Any]:
    """{"a.b.c": value} for every leaf of a config instance."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if dataclasses.is_dataclass(value):
                walk(value, f"{prefix}{f.name}.")
            else:
                flat[f"{prefix}{f.name}"] = value

    walk(cfg, "")
    return flat


def _flatten_dict(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flatten_dict(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_from_dict(cls: type[ConfigT], data: Mapping[str, Any]) -> ConfigT:
    """The inverse of `config_to_dict`, checked by the same parser as the
    command line (unknown keys, types, choices); absent keys take the
    class's defaults; keys the class has moved since are read at their new place."""
    words = []
    moved = moved_keys(cls)
    for key, value in _flatten_dict(data).items():
        key = moved.get(key, key)
        if isinstance(value, list):
            words.append((key, [f"--{key}", *(v if isinstance(v, str) else json.dumps(v)
                                              for v in value)]))
        else:
            words.append((key, [f"--{key}={value}"]))
    return _apply_words(cls(), words)


def save_config_json(cfg: Any, path: str, **extra: Any) -> None:
    """Writes the config (plus ``extra`` top-level entries, e.g. the run
    directory) to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**config_to_dict(cfg), **extra}, f, indent=2)
        f.write("\n")


def load_config_json(cls: type[ConfigT], path: str, ignore: Sequence[str] = ("run",)) -> ConfigT:
    """A config.json written by `save_config_json` (its ``ignore`` entries,
    which are not settings, left out)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return config_from_dict(cls, {k: v for k, v in data.items() if k not in ignore})


def config_diff(old: Any, new: Any) -> list[str]:
    """``key: old -> new`` for every leaf that differs."""
    a, b = flatten_config(old), flatten_config(new)
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def format_config(cfg: Any, notes: Mapping[str, str] | None = None) -> str:
    """``key = value`` a leaf, keys aligned, ``# note`` after those in ``notes``."""
    flat, notes = flatten_config(cfg), notes or {}
    width = max(map(len, flat), default=0)
    return "\n".join(f"{k.ljust(width)} = {v!r}" + (f"  # {notes[k]}" if k in notes else "")
                     for k, v in flat.items())


# --- command lines of the entry-point scripts ---------------------------------


def preset_from_argv(argv: Sequence[str], default: str, presets: PresetCatalog) -> str:
    """The --config=NAME of a command line (``default`` without one); a
    one-paragraph error and exit status 2 for a name not in ``presets``."""
    import argparse

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=default)
    name = pre.parse_known_args(list(argv))[0].config
    message = presets.unknown_message(name)
    if message:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)
    return name


def parse_preset_command(cls: type[ConfigT], argv: Sequence[str], default_preset: str,
                         description: str, presets: PresetCatalog, base=None) -> ConfigT:
    """A script's command line: ``cls`` is a dataclass with a ``cfg`` field (the
    RunConfig, keys as --section.key=value), a ``config`` field (a preset of
    ``presets``) and the script's own options. ``base(cfg, argv)`` may replace the
    preset's config before the keys apply (--resume: the saved run's). Errors: exit 2."""
    from crl_jax.training.config import RunConfig

    name = preset_from_argv(argv, default_preset, presets)
    cfg = presets.load(name) if base is None else base(presets.load(name), argv)
    try:
        return tyro.cli(cls, default=cls(cfg=cfg, config=name),
                        args=normalize_args(RunConfig, argv), description=description,
                        use_underscores=True)
    except (TypeError, ValueError) as err:  # checks across sections: one line, no traceback
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
