"""experiments/benchmarks/profile_sampler.py on a tiny model: the decode step is found
in the trace and its operations are named by the model code's jaxpr ops."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_profile_names_the_decode_steps_operations():
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "experiments", "benchmarks", "profile_sampler.py"), "--batch=4",
         "--hidden=64", "--layers=2", "--vocab=128", "--prompt_len=8", "--new_tokens=16",
         "--top=40"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    step = re.search(r"decode step \(traced; 15 in the call\): ([\d.]+) ms wall, (\d+) operations",
                     out)
    assert step, out
    rows = re.findall(r"^\s+([\d.]+)\s+([\d.]+)  (\S+)\s+(\S+)", out, re.M)
    kinds = {(op, shape) for _, _, op, shape in rows}
    # Per layer: q, o (4x64 -> 64) and k, v projections, gate/up (64 -> 192), down;
    # then the unembedding: every matmul of the model appears with its shape.
    assert ("dot_general", "f32[4,192]") in kinds and ("dot_general", "f32[4,128]") in kinds, out
    gate_up = next(float(n) for _, n, op, shape in rows if (op, shape) == ("dot_general", "f32[4,192]"))
    assert gate_up == 4.0  # gate and up, two layers, once per step
