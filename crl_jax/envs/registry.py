"""make_env(name, **kwargs): every environment of the project by name.

Factories are "module:attribute" strings imported only when called, so the
registry loads without the optional packages (nle, alfworld) and before the
ALFWorld modules exist; a missing one raises a clear error naming what to
install.
"""
from __future__ import annotations

import importlib

from crl_jax.envs.minihack_env import TASKS as _MINIHACK_TASKS

_MINIHACK = "crl_jax.envs.minihack_env:MiniHackEnv"

# name -> (factory, fixed keyword arguments)
_ENVS: dict[str, tuple[str, dict]] = {
    **{name: (_MINIHACK, {"env_id": name}) for name in _MINIHACK_TASKS},
    "sokoban": ("crl_jax.envs.sokoban:SokobanEnv", {}),
    "webshop": ("crl_jax.envs.webshop.env:WebShopEnv", {}),
    "swe_local": ("crl_jax.envs.swe.env:SWEEnv", {}),
    # ALFWorld: filled by crl_jax.envs.alfworld_env (fast engine by default).
    "alfworld": ("crl_jax.envs.alfworld_env:make_alfworld_env", {"engine": "fast"}),
    "alfworld_fast": ("crl_jax.envs.alfworld_env:make_alfworld_env", {"engine": "fast"}),
    "alfworld_real": ("crl_jax.envs.alfworld_env:make_alfworld_env", {"engine": "real"}),
}

# name prefix -> expert factory: a class with reset() and act(env) -> str,
# where env is the environment object itself (the pool calls it in the
# worker). "alfworld" covers alfworld_fast and alfworld_real by prefix.
_EXPERTS: dict[str, str] = {
    "MiniHack-": "crl_jax.envs.minihack_expert:MiniHackExpert",
    "sokoban": "crl_jax.envs.sokoban:SokobanExpert",
    "webshop": "crl_jax.envs.webshop.expert:WebShopExpert",
    "swe": "crl_jax.envs.swe.expert:SWEExpert",
    "alfworld": "crl_jax.envs.alfworld_expert:AlfWorldEnvExpert",
}


def env_names() -> tuple[str, ...]:
    return tuple(_ENVS)


def _load(target: str, name: str):
    module, attr = target.split(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as err:
        hint = {"nle": "pip install nle minihack gymnasium 'setuptools<81'",
                "minihack": "pip install nle minihack gymnasium 'setuptools<81'",
                "alfworld": "pip install alfworld==0.4.2 textworld"}
        extra = next((h for k, h in hint.items() if k in str(err)), "")
        raise ImportError(f"environment {name!r} needs {module} which failed to "
                          f"import ({err}). {extra}".strip()) from err
    except AttributeError:
        raise ImportError(f"environment {name!r}: {module} has no {attr!r}") from None


def make_env(name: str, **kwargs):
    """A new environment (TextEnv) of the given name; kwargs go to its
    constructor (e.g. seed=, max_episode_steps=)."""
    if name not in _ENVS:
        raise ValueError(f"unknown environment {name!r}; valid: {sorted(_ENVS)}")
    target, fixed = _ENVS[name]
    clash = set(fixed) & set(kwargs)
    if clash:
        raise ValueError(f"{sorted(clash)} is fixed by the name {name!r}")
    return _load(target, name)(**fixed, **kwargs)


def make_expert(name: str):
    """The demonstration expert for environment ``name``."""
    if name not in _ENVS:
        raise ValueError(f"unknown environment {name!r}; valid: {sorted(_ENVS)}")
    for prefix, target in _EXPERTS.items():
        if name.startswith(prefix):
            return _load(target, name)()
    raise ValueError(f"no expert registered for {name!r}")
