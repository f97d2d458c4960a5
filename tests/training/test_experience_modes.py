"""What each experience.mode does is read through the configuration's
properties (crl_jax/training/experience_modes.py), never by comparing the
mode's name: the table below is written out by hand, and no module of
crl_jax compares an experience mode with a string."""
import ast
import dataclasses
import os

import pytest

from crl_jax.training.config import EXPERIENCE_MODES, ExperienceSpec, RunConfig
from crl_jax.training.config_io import config_to_dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROPERTIES = ("retrieves", "has_extractor", "trains_extractor", "extractor_frozen",
              "trains_actor", "static_bank", "is_oracle")
EXPECTED = {  # mode -> the properties that are true
    "comp_rl": {"retrieves", "has_extractor", "trains_extractor", "trains_actor"},
    "none": {"trains_actor"},
    "offline": {"retrieves", "has_extractor", "extractor_frozen", "trains_actor", "static_bank"},
    "static_online": {"retrieves", "has_extractor", "extractor_frozen", "trains_actor"},
    "exp_only": {"retrieves", "has_extractor", "trains_extractor"},
    "oracle": {"retrieves", "trains_actor", "is_oracle"},
}
# The modules allowed to name modes: the configuration and its truth table.
MODE_MODULES = {os.path.join("crl_jax", "training", "config.py"),
                os.path.join("crl_jax", "training", "experience_modes.py")}


def test_every_mode_has_a_row():
    assert set(EXPECTED) == set(EXPERIENCE_MODES)


@pytest.mark.parametrize("mode", EXPERIENCE_MODES)
def test_properties_match_the_hand_written_table(mode):
    spec = ExperienceSpec(mode=mode)
    got = {name for name in PROPERTIES if getattr(spec, name)}
    assert got == EXPECTED[mode]
    assert all(isinstance(getattr(spec, name), bool) for name in PROPERTIES)


def test_properties_are_not_configuration_fields():
    """Properties, not fields: config.json, warm-start keys and run names stay as they were."""
    fields = {f.name for f in dataclasses.fields(ExperienceSpec)}
    assert not fields & {*PROPERTIES, "behaviour"}
    assert not set(config_to_dict(RunConfig())["experience"]) & {*PROPERTIES, "behaviour"}


def _is_mode_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "mode"


def _reads_experience_mode(node: ast.AST) -> bool:
    """``<...>.experience.mode`` or ``experience.mode``."""
    if not _is_mode_attribute(node):
        return False
    owner = node.value
    return ((isinstance(owner, ast.Attribute) and owner.attr == "experience")
            or (isinstance(owner, ast.Name) and owner.id == "experience"))


def _string_literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _string_literals(elt)]
    return []


def mode_comparisons(source: str) -> list[int]:
    """Lines comparing an experience mode with a string literal: any
    ``experience.mode`` compared with a string, or any ``<x>.mode`` compared
    with an experience mode's name (``x = cfg.experience; x.mode == "none"``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literals = [s for op in operands for s in _string_literals(op)]
        if not literals:
            continue
        if any(_reads_experience_mode(op) for op in operands) or (
                any(_is_mode_attribute(op) for op in operands)
                and set(literals) & set(EXPERIENCE_MODES)):
            lines.append(node.lineno)
    return lines


def test_the_scan_finds_mode_comparisons():
    assert mode_comparisons('if cfg.experience.mode == "offline":\n    pass\n') == [1]
    assert mode_comparisons('y = x.mode not in ("none", "oracle")\n') == [1]
    assert mode_comparisons('y = "exp_only" != run.cfg.experience.mode\n') == [1]
    assert mode_comparisons('y = spec.mode == "split"\n') == []  # an advantage mode
    assert mode_comparisons('y = cfg.experience.trains_actor\n') == []


def test_no_module_compares_the_experience_mode_with_a_string():
    offenders = []
    for folder, _, files in os.walk(os.path.join(ROOT, "crl_jax")):
        for name in sorted(files):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, ROOT)
            if not name.endswith(".py") or rel in MODE_MODULES:
                continue
            with open(path, encoding="utf-8") as f:
                offenders += [f"{rel}:{line}" for line in mode_comparisons(f.read())]
    assert not offenders, ("compare experience modes through the configuration's properties "
                           f"(crl_jax/training/experience_modes.py): {offenders}")
