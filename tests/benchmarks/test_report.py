"""docs/BENCHMARKS.md's generated tables equal the JSON their benchmarks wrote."""
from __future__ import annotations

import os

import pytest

from experiments.benchmarks import report


def _kernel_report(load=0.5):
    variants = {"naive": {"peak_bytes": 400 * 2**20}, "fused": {"peak_bytes": 100 * 2**20}}
    return {"load_average_before": load, "backend": "cpu", "device_kind": "cpu", "cpu_count": 2,
            "jax": "0.10.2", "repeats": 5,
            "shapes": [{"N": 64, "d": 8, "V": 32, "dtype": "float32", "variants": variants,
                        "ratios": {"fused/naive": {"time": 0.5, "peak_memory": 0.25},
                                   "fused/floor": {"time": 1.125, "peak_memory": 2.0}}}]}


def test_the_kernels_table_from_a_hand_made_report():
    lines = report.render_kernels(_kernel_report())
    assert "load average before the run: 0.50" in lines[0]
    assert lines[-1] == "| 64, 8, 32 | float32 | 0.50 | 0.25 | 1.12 | 400, 100 |"
    assert "not recorded" in report.render_kernels(_kernel_report(load=None))[0]


def test_update_rewrites_only_the_block(tmp_path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# B\n\nbefore\n\n{report.begin('kernels')}\nold\n{report.end('kernels')}\n\nafter\n")
    (tmp_path / "kernels.json").write_text(__import__("json").dumps(_kernel_report()))
    assert report.update(str(doc), str(tmp_path)) == ["kernels"]
    text = doc.read_text()
    assert text.startswith("# B\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old" not in text and "| 64, 8, 32 |" in text


@pytest.mark.parametrize("name", sorted(report.RENDERERS))
def test_the_committed_tables_equal_their_json(name):
    if not os.path.exists(os.path.join(report.JSON_DIR, f"{name}.json")):
        pytest.fail(f"docs/benchmarks/{name}.json is missing: run the benchmark with --json")
    text = open(report.DOC, encoding="utf-8").read()
    assert report.doc_block(text, name) == report.render_block(name, report.load(name)), (
        "run: python experiments/benchmarks/report.py")


def _conversation_report():
    mode = lambda p, s, t: dict(prefilled=p, sampled=400, slot_use=s, max_slots=256,  # noqa: E731
                                seconds=t, first_call_s=9.0, tokens_per_s=400 / t)
    return {"load_average_before": 0.4, "load_average_after": 0.6, "backend": "cpu",
            "cpu_count": 2, "jax": "0.10.2",
            "config": dict(rows=4, max_new_tokens=48, mean_answer=24, max_prompt_tokens=2048,
                           hidden=128, layers=2, repeats=2),
            "results": [{"turns": 10, "rows": 4, "same_tokens": "4/4", "prefill_ratio": 6.0,
                         "speedup": 2.5, "re-encoded": mode(12000, 0.9, 5.0),
                         "continued": mode(2000, 0.8, 2.0)}]}


def test_the_conversation_cache_table_from_a_hand_made_report():
    lines = report.render_conversation_cache(_conversation_report())
    assert "load average 0.40 before, 0.60 after" in lines[0]
    assert lines[4] == "| 10 | re-encoded | 12,000 | 0.90 | 5.00 | 80 |  |"
    assert lines[5] == "| 10 | continued | 2,000 | 0.80 | 2.00 | 200 | prefill 6.0x, time **2.50x** |"
    assert lines[-1] == "Episodes with the same tokens in both modes: 10 turns 4/4."
