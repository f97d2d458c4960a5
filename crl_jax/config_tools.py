"""Run configurations as trees of frozen dataclasses: overrides, JSON, presets.

A run configuration is a frozen dataclass whose fields are scalars, tuples or
further frozen dataclasses. This module gives the command line its grammar
("a.b.c=value", parsed by the field's type annotation), writes and reads the
tree as JSON (strict about unknown keys, so a renamed field is an error rather
than a silently ignored setting), prints it as a dotted listing, and finds the
presets (one module per preset, each with a `get_config()`).

A field may restrict its values with
`dataclasses.field(default=..., metadata={"choices": ("a", "b")})`; overrides
and `config_from_dict` both enforce it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import json
import pkgutil
import types
import typing
from typing import Any, Literal, Mapping, Sequence, TypeVar, Union

ConfigT = TypeVar("ConfigT")

_TRUE_WORDS = ("true", "1", "yes", "on")
_FALSE_WORDS = ("false", "0", "no", "off")
_NONE_WORDS = ("none", "null")


# --------------------------------------------------------------------------- #
# Type introspection
# --------------------------------------------------------------------------- #


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> dict[str, Any]:
    """Resolved annotations of a dataclass (handles `from __future__` strings)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _fields_by_name(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _unknown_key_error(key: str, valid: Sequence[str], where: str) -> ValueError:
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Unknown config key {key!r} in {where}.{hint} Valid keys: {', '.join(valid)}"
    )


def _check_choices(field: dataclasses.Field, value: Any, path: str) -> None:
    choices = field.metadata.get("choices") if field.metadata else None
    if choices is not None and value not in tuple(choices):
        raise ValueError(
            f"Config field {path!r} must be one of {tuple(choices)!r}, got {value!r}"
        )


# --------------------------------------------------------------------------- #
# Parsing command-line text by type
# --------------------------------------------------------------------------- #


class _ParseError(Exception):
    """Internal: text did not fit the type; turned into a ValueError with context."""


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise _ParseError(f"expected one of {_TRUE_WORDS + _FALSE_WORDS}")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        pass
    try:  # "1e6" for step counts; only when the number is whole.
        as_float = float(text)
    except ValueError as exc:
        raise _ParseError("not an integer") from exc
    if not as_float.is_integer():
        raise _ParseError("not a whole number")
    return int(as_float)


def _split_sequence(text: str) -> list[Any]:
    """'1,2,3' or a JSON list; JSON items keep their JSON type, others are text."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _ParseError(f"bad JSON list ({exc})") from exc
        if not isinstance(items, list):
            raise _ParseError("expected a JSON list")
        return items
    if not stripped:
        return []
    return [part.strip() for part in stripped.split(",")]


def _parse_item(item: Any, tp: Any) -> Any:
    """An element of a JSON list may already be a number/bool; coerce via text."""
    if isinstance(item, str):
        return _parse_text(item, tp)
    return _coerce_json(item, tp, "item")


def _parse_text(text: str, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return text
    if _is_union(tp):
        members = typing.get_args(tp)
        if type(None) in members and text.strip().lower() in _NONE_WORDS:
            return None
        for member in members:
            if member is type(None):
                continue
            try:
                return _parse_text(text, member)
            except _ParseError:
                continue
        raise _ParseError(f"fits none of {[_type_name(m) for m in members]}")
    if origin is Literal:
        allowed = typing.get_args(tp)
        for value in allowed:
            if str(value) == text.strip():
                return value
        raise _ParseError(f"expected one of {allowed!r}")
    if origin in (tuple, list):
        args = typing.get_args(tp)
        items = _split_sequence(text)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(items) != len(args):
                raise _ParseError(f"expected {len(args)} items, got {len(items)}")
            parsed = [_parse_item(i, a) for i, a in zip(items, args)]
        else:
            element = args[0] if args else Any
            parsed = [_parse_item(i, element) for i in items]
        return tuple(parsed) if origin is tuple else parsed
    if tp is type(None):
        if text.strip().lower() in _NONE_WORDS:
            return None
        raise _ParseError("expected none")
    if tp is bool:
        return _parse_bool(text)
    if tp is int:
        return _parse_int(text)
    if tp is float:
        try:
            return float(text.strip())
        except ValueError as exc:
            raise _ParseError("not a number") from exc
    if tp is str:
        return text
    if dataclasses.is_dataclass(tp):
        raise _ParseError("is a nested config: set its fields with a dotted key")
    raise _ParseError(f"unsupported field type {_type_name(tp)}")


# --------------------------------------------------------------------------- #
# Overrides
# --------------------------------------------------------------------------- #


def _set_path(cfg: Any, keys: list[str], text: str, done: str) -> Any:
    """Returns a copy of cfg with the field at `keys` set from `text`."""
    where = f"config section {done!r}" if done else "the top-level config"
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise ValueError(
            f"Config key {done!r} is a {type(cfg).__name__} value, not a nested "
            f"config; it has no field {keys[0]!r}"
        )
    fields = _fields_by_name(type(cfg))
    key = keys[0]
    if key not in fields:
        raise _unknown_key_error(key, list(fields), where)
    path = f"{done}.{key}" if done else key
    if len(keys) > 1:
        child = _set_path(getattr(cfg, key), keys[1:], text, path)
        return dataclasses.replace(cfg, **{key: child})
    tp = _field_types(type(cfg))[key]
    try:
        value = _parse_text(text, tp)
    except _ParseError as exc:
        raise ValueError(
            f"Cannot set config field {path!r}: expected {_type_name(tp)}, "
            f"got {text!r} ({exc})"
        ) from None
    _check_choices(fields[key], value, path)
    return dataclasses.replace(cfg, **{key: value})


def apply_overrides(cfg: ConfigT, overrides: Sequence[str]) -> ConfigT:
    """Applies "a.b.c=value" overrides in order (later ones win); returns a new cfg.

    Values are parsed by the field's annotation: int ("3", "1e6"), float,
    bool (true/false/1/0/yes/no/on/off), str (the raw text), None for
    Optional fields ("none"/"null"), Literal[...] and tuples/lists written as
    "1,2,3" or a JSON list. Raises ValueError naming the key, the expected type
    and the given text; an unknown key lists the valid keys at that level.
    """
    for override in overrides:
        key, sep, text = override.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(
                f"Override {override!r} must look like 'section.field=value'"
            )
        cfg = _set_path(cfg, key.split("."), text, "")
    return cfg


# --------------------------------------------------------------------------- #
# JSON round trip
# --------------------------------------------------------------------------- #


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """Nested plain dict (tuples become lists) suitable for json.dumps."""
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise ValueError(f"config_to_dict expects a dataclass instance, got {cfg!r}")

    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {
                f.name: convert(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.init
            }
        if isinstance(value, (tuple, list)):
            return [convert(v) for v in value]
        return value

    return convert(cfg)


def _coerce_json(value: Any, tp: Any, path: str) -> Any:
    """Checks/converts a JSON value against an annotation (strict: no str->int)."""

    def fail() -> ValueError:
        return ValueError(
            f"Config field {path!r}: expected {_type_name(tp)}, got {value!r}"
        )

    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if _is_union(tp):
        members = typing.get_args(tp)
        if value is None:
            if type(None) in members:
                return None
            raise fail()
        for member in members:
            if member is type(None):
                continue
            try:
                return _coerce_json(value, member, path)
            except ValueError:
                continue
        raise fail()
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        raise fail()
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise fail()
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise fail()
            items = [_coerce_json(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
        else:
            element = args[0] if args else Any
            items = [_coerce_json(v, element, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise fail()
        return _from_dict(tp, value, path)
    if tp is type(None):
        if value is None:
            return None
        raise fail()
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise fail()
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise fail()
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise fail()
    if tp is str:
        if isinstance(value, str):
            return value
        raise fail()
    raise ValueError(f"Config field {path!r}: unsupported field type {_type_name(tp)}")


def _from_dict(cls: type, data: Mapping[str, Any], path: str) -> Any:
    fields = _fields_by_name(cls)
    hints = _field_types(cls)
    where = f"config section {path!r}" if path else "the top-level config"
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise _unknown_key_error(key, list(fields), where)
        sub = f"{path}.{key}" if path else key
        kwargs[key] = _coerce_json(value, hints[key], sub)
        _check_choices(fields[key], kwargs[key], sub)
    missing = [
        name
        for name, f in fields.items()
        if name not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"Missing required keys in {where}: {', '.join(missing)}")
    return cls(**kwargs)


def config_from_dict(cls: type[ConfigT], data: Mapping[str, Any]) -> ConfigT:
    """Inverse of config_to_dict; unknown keys and wrong types are ValueErrors.

    Keys absent from `data` take the dataclass defaults.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"config_from_dict expects a dataclass type, got {cls!r}")
    return _from_dict(cls, data, "")


def save_config_json(cfg: Any, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config_to_dict(cfg), f, indent=2, sort_keys=False)
        f.write("\n")


def load_config_json(cls: type[ConfigT], path: str) -> ConfigT:
    with open(path, encoding="utf-8") as f:
        return config_from_dict(cls, json.load(f))


# --------------------------------------------------------------------------- #
# Listing and presets
# --------------------------------------------------------------------------- #


def flatten_config(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """{"a.b.c": value} for every leaf field, in declaration order."""
    flat: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        if not f.init:
            continue
        value = getattr(cfg, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            flat.update(flatten_config(value, key + "."))
        else:
            flat[key] = value
    return flat


def format_config(cfg: Any) -> str:
    """Readable listing, one "a.b.c = value" line per leaf, keys aligned."""
    flat = flatten_config(cfg)
    if not flat:
        return f"{type(cfg).__name__}()"
    width = max(len(k) for k in flat)
    return "\n".join(f"{k.ljust(width)} = {v!r}" for k, v in flat.items())


def list_presets(presets_package: str = "experiments.configs") -> list[str]:
    """Module names in the presets package (private `_x` modules excluded)."""
    package = importlib.import_module(presets_package)
    paths = getattr(package, "__path__", None)
    if paths is None:
        raise ValueError(f"{presets_package!r} is a module, not a package of presets")
    return sorted(
        m.name for m in pkgutil.iter_modules(paths) if not m.name.startswith("_")
    )


def load_preset(name: str, presets_package: str = "experiments.configs") -> Any:
    """Imports `<presets_package>.<name>` and returns its `get_config()`."""
    available = list_presets(presets_package)
    if name not in available:
        close = difflib.get_close_matches(name, available, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"Unknown preset {name!r}.{hint} Available presets in "
            f"{presets_package}: {', '.join(available) or '(none)'}"
        )
    module = importlib.import_module(f"{presets_package}.{name}")
    get_config = getattr(module, "get_config", None)
    if not callable(get_config):
        raise ValueError(f"Preset module {module.__name__} has no get_config() function")
    return get_config()
