"""The import graph of the three packages: no circles, and imports flow one way.

DESIGN: experiments -> crl_jax -> models, kernels; `kernels` imports only
jax/numpy; `models` never imports `crl_jax`. Imports inside functions count
too: a lazy import hides a circle from Python, not from the reader.
"""
from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("crl_jax", "models", "kernels")


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[: -len(".py")].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _modules() -> dict[str, str]:
    out = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    out[_module_name(path)] = path
    return out


def _imports(path: str, known: set[str]) -> set[str]:
    """Project modules imported anywhere in the file (``from a import b``
    counts as a.b when a.b is a module, else as a)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        # A package's own __init__ is imported on the way to any of its
        # modules; that edge is Python's, not the code's.
        parents = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
        graph[name] = _imports(path, known) - {name} - parents
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_the_packages():
    graph = _graph()
    assert "crl_jax.training.loop" in graph
    assert "crl_jax.training.step" in graph["crl_jax.training.loop"]
    assert "kernels.policy_losses" in graph["crl_jax.rl.learner"]


def test_no_import_circles():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("package, forbidden", [("models", "crl_jax"), ("kernels", "crl_jax"),
                                                ("kernels", "models")])
def test_imports_flow_one_way(package, forbidden):
    bad = sorted(f"{m} imports {t}" for m, targets in _graph().items() if m.startswith(package + ".")
                 for t in targets if t.split(".")[0] == forbidden)
    assert not bad, bad


def _experiments_references(path: str) -> list[str]:
    """Where a module of the library reaches for the experiments package: an
    import, or a string that names one of its modules (``import_module`` and
    the like take their target as a string)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [w for w in node.value.split() if w.startswith("experiments.")]
        else:
            continue
        found += [f"line {node.lineno}: {n}" for n in names
                  if n == "experiments" or n.startswith("experiments.")]
    return found


def test_the_library_never_imports_the_experiments():
    # The scripts depend on the library, never the reverse: presets are handed
    # in (config_io.PresetCatalog), not looked up by the library.
    bad = {name: refs for name, path in _modules().items()
           if (refs := _experiments_references(path))}
    assert not bad, bad


def test_the_library_does_not_name_the_experiments_folder():
    # Not even in prose: a docstring that sends a reader to a script names
    # the script or the doc that lists it, so the library reads on its own.
    bad = [f"{name}:{i}" for name, path in _modules().items()
           for i, line in enumerate(open(path, encoding="utf-8"), 1) if "experiments" in line]
    assert not bad, bad


def test_the_experiments_check_finds_an_import(tmp_path):
    for source in ("import experiments.configs\n", "from experiments import configs\n",
                   "import importlib\nimportlib.import_module('experiments.configs')\n"):
        path = tmp_path / "m.py"
        path.write_text(source)
        assert _experiments_references(str(path)), source
    path.write_text("# see experiments/run.py\nx = 'an experiments folder'\n")
    assert not _experiments_references(str(path))
