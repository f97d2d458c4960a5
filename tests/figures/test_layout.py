"""Where the scripts live: the paper's figures and their machinery in
experiments/figures/, the project's studies in experiments/studies/, and no
script or test that edits sys.path (the experiments package is installed)."""
from __future__ import annotations

import ast
import os

from experiments.figures import reproduce

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _figure_scripts(folder: str) -> set[str]:
    """Modules of ``folder`` that define a figure (both ``arms`` and ``make``)."""
    out = set()
    path = os.path.join(ROOT, "experiments", folder)
    for name in os.listdir(path):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(path, name), encoding="utf-8").read())
            defined = {t.id for node in tree.body if isinstance(node, ast.Assign)
                       for t in ast.walk(node) if isinstance(t, ast.Name)}
            defined |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            defined |= {alias.asname or alias.name for node in tree.body
                        if isinstance(node, ast.ImportFrom) for alias in node.names}
            if {"arms", "make"} <= defined:
                out.add(name[:-3])
    return out


def test_paper_figures_and_studies_live_apart():
    assert _figure_scripts("figures") == set(reproduce.PAPER_FIGURES)
    assert _figure_scripts("studies") == set(reproduce.STUDIES)
    assert reproduce.STUDIES <= set(reproduce.SCRIPTS)  # every study is drawn too
    assert len(reproduce.SCRIPTS) == len(set(reproduce.SCRIPTS))


def test_every_script_is_found_by_its_name():
    for name in reproduce.SCRIPTS:
        module = reproduce.module_name(name)
        folder = module.split(".")[1]
        assert os.path.exists(os.path.join(ROOT, "experiments", folder, f"{name}.py")), module


def _sys_path_edits(path: str) -> list[int]:
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys"]


def test_no_script_or_test_edits_sys_path():
    bad = []
    for top in ("experiments", "tests"):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in ("runs", "out", "__pycache__")]
            bad += [f"{os.path.relpath(os.path.join(folder, f), ROOT)}:{line}"
                    for f in files if f.endswith(".py")
                    for line in _sys_path_edits(os.path.join(folder, f))]
    assert not bad, bad


def test_the_sys_path_check_sees_an_edit(tmp_path):
    path = tmp_path / "script.py"
    path.write_text("import sys\nsys.path.insert(0, '..')\n")
    assert _sys_path_edits(str(path)) == [2]
