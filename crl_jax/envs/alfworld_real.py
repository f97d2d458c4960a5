"""The real ALFWorld engine: alfworld 0.4.2 on TextWorld's PDDL environment.

Each game is rebuilt from its record with the domain and grammar that ship
inside the alfworld package (alfworld_data.game_json), loaded into
``textworld.envs.pddl.PddlEnv`` (Fast Downward grounds it) and wrapped by
alfworld's ``AlfredDemangler`` (names like "desk 2") and ``AlfredInfos``,
as ``AlfredTWEnv`` does. The import is optional: without alfworld installed
``RealAlfredEngine`` raises an ImportError that says what to install.

The TextEnv wrapper is alfworld_env.RealAlfWorldEnv.
"""
from __future__ import annotations

import collections

from crl_jax.envs.alfworld_data import GameRecord, game_json

INSTALL_HINT = "pip install alfworld==0.4.2 textworld==1.7.0 (builds fast-downward, ~2 minutes)"


def real_engine_available() -> bool:
    try:
        import alfworld.agents.environment.alfred_tw_env  # noqa: F401
        import textworld.envs.pddl  # noqa: F401
        import fast_downward  # noqa: F401
    except ImportError:
        return False
    return True


def _import_textworld():
    try:
        import textworld
        from textworld.envs.pddl import PddlEnv
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    except ImportError as e:
        raise ImportError(f"the real ALFWorld engine needs alfworld 0.4.2: {INSTALL_HINT}") from e
    return textworld, PddlEnv, AlfredDemangler, AlfredInfos


class RealAlfredEngine:
    """One game on the original engine; same interface as FastAlfredEngine."""

    def __init__(self, record: GameRecord):
        textworld, pddl_env, demangler, infos_wrapper = _import_textworld()
        self.record = record
        request = textworld.EnvInfos(won=True, admissible_commands=True)
        env = pddl_env(request)
        env = demangler(env, shuffle=False)
        self._env = infos_wrapper(env)
        self._env.load(game_json(record))
        self._state = None

    def reset(self) -> tuple[str, tuple[str, ...], bool]:
        self._state = self._env.reset()
        return self._state.feedback, tuple(self._state["admissible_commands"]), bool(self._state["won"])

    def step(self, command: object) -> tuple[str, tuple[str, ...], bool, bool]:
        """Returns (feedback, admissible, won, accepted)."""
        cmd = command if isinstance(command, str) else ""
        accepted = cmd.strip() in self._state["admissible_commands"]
        self._state, _, _ = self._env.step(cmd)
        return (self._state.feedback, tuple(self._state["admissible_commands"]),
                bool(self._state["won"]), accepted)

    def won(self) -> bool:
        return bool(self._state["won"])

    @property
    def facts(self) -> dict:
        """The current facts as {predicate: set of id tuples} (positive only),
        the same index the fast engine keeps."""
        index = collections.defaultdict(set)
        for prop in self._state["_facts"]:
            if not prop.name.startswith("not_"):
                index[prop.name].add(tuple(v.name for v in prop.arguments))
            elif prop.name == "not_inreceptacle":
                index[prop.name].add(tuple(v.name for v in prop.arguments))
        return index

    def close(self) -> None:
        self._env.close()
