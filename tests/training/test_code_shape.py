"""The trainer stays readable: its modules under 400 lines, its functions under 60."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAINER = ("components", "step", "loop", "evaluation", "background", "warm_stage", "run_dir")


@pytest.mark.parametrize("name", TRAINER)
def test_trainer_module_is_small(name):
    path = os.path.join(ROOT, "crl_jax", "training", f"{name}.py")
    source = open(path, encoding="utf-8").read()
    assert len(source.splitlines()) < 400
    long = [(f.name, f.end_lineno - f.lineno + 1) for f in ast.walk(ast.parse(source))
            if isinstance(f, ast.FunctionDef) and f.end_lineno - f.lineno + 1 >= 60]
    assert not long, long
