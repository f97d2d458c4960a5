"""Run configurations on the command line and on disk, parsed by tyro.

The schema is the tree of frozen dataclasses in `crl_jax.training.config`;
presets are modules under experiments/configs/ with a `get_config()`. One
parser, tyro, reads every source of settings against that schema, so types,
choices (Literal fields) and unknown keys are checked the same way whether
they come from the command line (``--train.steps=3``), from code
(``apply_overrides(cfg, ["train.steps=3"])``) or from a saved config.json.

Why tyro (BUILD.md says more): it builds the command line from the
dataclasses themselves, takes each key's help from the comment or docstring
beside the field, lists every key under its section in ``--help``, suggests
the closest key for a typo and exits with status 2 on bad input.
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
import typing
from typing import Any, Mapping, Sequence, TypeVar

import tyro

ConfigT = TypeVar("ConfigT")
PRESETS_PACKAGE = "experiments.configs"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
# Config booleans take a value (--experience.search_and_ask=True), like every
# other key, so a saved config and an override read the same way.
TYRO_CONFIG = (tyro.conf.FlagConversionOff,)


class ConfigError(ValueError):
    """A bad preset, key, type or value; the message says what is valid."""


# --------------------------------------------------------------------------- #
# Presets
# --------------------------------------------------------------------------- #


def list_presets(package: str = PRESETS_PACKAGE) -> list[str]:
    """Preset names: the modules of the presets package (``_private`` ones excluded)."""
    paths = importlib.import_module(package).__path__
    return sorted(m.name for m in pkgutil.iter_modules(paths) if not m.name.startswith("_"))


def preset_summary(name: str, package: str = PRESETS_PACKAGE) -> str:
    """The first line of a preset module's docstring."""
    doc = importlib.import_module(f"{package}.{name}").__doc__ or ""
    return doc.strip().split("\n")[0]


def unknown_preset_message(name: str, package: str = PRESETS_PACKAGE) -> str | None:
    """None if ``name`` is a preset, else a one-paragraph error naming the valid ones."""
    available = list_presets(package)
    if name in available:
        return None
    close = difflib.get_close_matches(name, available, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Unknown preset {name!r}.{hint} Presets: {', '.join(available)}."


def load_preset(name: str, package: str = PRESETS_PACKAGE):
    """The RunConfig of preset ``name`` (its module's ``get_config()``)."""
    message = unknown_preset_message(name, package)
    if message:
        raise ConfigError(message)
    return importlib.import_module(f"{package}.{name}").get_config()


# --------------------------------------------------------------------------- #
# Keys and their types
# --------------------------------------------------------------------------- #


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
    """Command-line words with config booleans spelt as tyro wants them:
    ``--a.flag=true`` (or yes/1/on) becomes ``--a.flag=True``."""
    types = leaf_types(cls)
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key.startswith("--") and _is_bool(types.get(key[2:])):
            arg = f"{key}={_bool_word(value)}"
        out.append(arg)
    return out


def override_args(cls: type, overrides: Sequence[str]) -> list[str]:
    """``a.b=value`` overrides as command-line words (``--a.b=value``).

    A sequence field takes comma-separated items or a JSON list
    (``env.names=alfworld,sokoban``); a boolean takes true/false, yes/no, 1/0.
    """
    types = leaf_types(cls)
    args: list[str] = []
    for item in overrides:
        key, sep, value = item.removeprefix("--").partition("=")
        if not sep or not key:
            raise ConfigError(f"Override {item!r} must look like 'section.key=value'.")
        tp = types.get(key)
        if _is_sequence(tp):
            text = value.strip()
            parts = json.loads(text) if text.startswith("[") else [p for p in text.split(",") if p]
            args += [f"--{key}", *map(str, parts)]
        elif _is_bool(tp):
            args.append(f"--{key}={_bool_word(value)}")
        else:
            args.append(f"--{key}={value}")
    return args


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #


def _plain(text: str) -> str:
    """tyro's boxed error as one paragraph of plain text."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"[\u2500-\u257f]|-{3,}|^\s*[|+]|[|+]\s*$", " ", line).strip()
        if line and not line.startswith("For full helptext"):
            lines.append(line)
    return " ".join(lines)


def parse_args(cls: type[ConfigT], default: ConfigT, args: Sequence[str]) -> ConfigT:
    """``default`` with ``args`` (``--a.b=value`` words) applied, read by tyro;
    ConfigError (tyro's message as one paragraph) on bad input."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return tyro.cli(cls, default=default, args=list(args), use_underscores=True,
                            config=TYRO_CONFIG)
    except SystemExit:
        raise ConfigError(_plain(err.getvalue()) or f"bad config arguments {list(args)}") from None


def apply_overrides(cfg: ConfigT, overrides: Sequence[str]) -> ConfigT:
    """A copy of ``cfg`` with ``a.b=value`` overrides applied (later ones win)."""
    if not overrides:
        return cfg
    return parse_args(type(cfg), cfg, override_args(type(cfg), overrides))


# --------------------------------------------------------------------------- #
# JSON
# --------------------------------------------------------------------------- #


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
    class's defaults."""
    args: list[str] = []
    for key, value in _flatten_dict(data).items():
        if isinstance(value, list):
            args += [f"--{key}", *(json.dumps(v) if not isinstance(v, str) else v for v in value)]
        elif isinstance(value, bool) or value is None:
            args.append(f"--{key}={value}")
        else:
            args.append(f"--{key}={value}")
    return parse_args(cls, cls(), args)


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


def format_config(cfg: Any) -> str:
    """One ``key = value`` line per leaf, keys aligned."""
    flat = flatten_config(cfg)
    width = max(map(len, flat), default=0)
    return "\n".join(f"{k.ljust(width)} = {v!r}" for k, v in flat.items())
