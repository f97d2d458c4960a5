"""docs/BENCHMARKS.md's generated tables, from the JSON the benchmarks write.

A benchmark run with ``--json docs/benchmarks/NAME.json`` leaves every number
it printed there; this script renders each such file into its block of
docs/BENCHMARKS.md (between ``<!-- bench NAME: generated ... -->`` and
``<!-- bench NAME end -->``), so a table never drifts from the run it
reports. tests/benchmarks/test_report.py fails when a block differs.

    python experiments/benchmarks/bench_kernels.py --json=docs/benchmarks/kernels.json
    python experiments/benchmarks/report.py        # rewrite the blocks
"""
from __future__ import annotations

import json
import os
from typing import Callable

from experiments.figures.readme_block import marked_block, replace_marked

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
JSON_DIR = os.path.join(REPO, "docs", "benchmarks")


def _cell(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def render_kernels(report: dict) -> list[str]:
    """The loss kernels' table: per shape, fused against naive (time, peak
    memory) and against the unembedding floor (time)."""
    load = report.get("load_average_before")
    lines = [f"Measured on {report['backend']} ({report['device_kind']}, "
             f"{report['cpu_count']} cores), jax {report['jax']}, fastest of "
             f"{report['repeats']} calls per variant; load average before the run: "
             + ("not recorded" if load is None else f"{load:.2f}") + ".", "",
             "| N, d, V | dtype | fused / naive time | fused / naive peak memory "
             "| fused / floor time | naive, fused peak (MiB) |",
             "|---|---|---|---|---|---|"]
    for row in report["shapes"]:
        ratios, var = row["ratios"], row["variants"]
        naive, floor = ratios.get("fused/naive", {}), ratios.get("fused/floor", {})
        peaks = ", ".join(f"{var[n]['peak_bytes'] / 2**20:.0f}" if var.get(n, {}).get("peak_bytes")
                          else "n/a" for n in ("naive", "fused"))
        loss = "" if row.get("loss", "ppo") == "ppo" else f" ({row['loss']})"
        lines.append(f"| {row['N']}, {row['d']}, {row['V']}{loss} | {row['dtype']} | "
                     f"{_cell(naive.get('time'))} | {_cell(naive.get('peak_memory'))} | "
                     f"{_cell(floor.get('time'))} | {peaks} |")
    return lines


def render_conversation_cache(report: dict) -> list[str]:
    """Continued against re-encoded conversations: per turn cap, each mode's
    prefill, slot use, time and rate, and the two ratios."""
    load = report.get("load_average_before")
    c = report["config"]
    lines = [f"Measured on {report['backend']} ({report['cpu_count']} cores), jax "
             f"{report['jax']}; {c['rows']} rows, answers up to {c['max_new_tokens']} tokens, "
             f"conversation limit {c['max_prompt_tokens']}, actor width {c['hidden']} x "
             f"{c['layers']} layers; median of {c['repeats']} rollouts per mode; load average "
             + ("not recorded" if load is None else f"{load:.2f} before, "
                f"{report['load_average_after']:.2f} after") + ".", "",
             "| turns | mode | prefilled tokens | real tokens / slots | rollout (s) "
             "| sampled tok/s | re-encoded / continued |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        for name in ("re-encoded", "continued"):
            m = r[name]
            ratio = (f"prefill {r['prefill_ratio']:.1f}x, time **{r['speedup']:.2f}x**"
                     if name == "continued" else "")
            lines.append(f"| {r['turns']} | {name} | {m['prefilled']:,} | {m['slot_use']:.2f} | "
                         f"{m['seconds']:.2f} | {m['tokens_per_s']:,.0f} | {ratio} |")
    same = ", ".join(f"{r['turns']} turns {r['same_tokens']}" for r in report["results"])
    lines += ["", f"Episodes with the same tokens in both modes: {same}."]
    return lines


RENDERERS: dict[str, Callable[[dict], list[str]]] = {
    "kernels": render_kernels, "conversation_cache": render_conversation_cache}


def begin(name: str) -> str:
    return (f"<!-- bench {name}: generated from docs/benchmarks/{name}.json by "
            f"experiments/benchmarks/report.py; do not edit -->")


def end(name: str) -> str:
    return f"<!-- bench {name} end -->"


def render_block(name: str, report: dict) -> str:
    return "\n".join([begin(name), "", *RENDERERS[name](report), "", end(name)])


def doc_block(text: str, name: str) -> str:
    """The block of ``name`` as the document holds it."""
    return marked_block(text, begin(name), end(name))


def load(name: str, json_dir: str = JSON_DIR) -> dict:
    with open(os.path.join(json_dir, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def update(doc: str = DOC, json_dir: str = JSON_DIR) -> list[str]:
    """Rewrites every block whose JSON exists; returns the names rewritten."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    done = []
    for name in RENDERERS:
        if os.path.exists(os.path.join(json_dir, f"{name}.json")):
            text = replace_marked(text, begin(name), end(name),
                                  render_block(name, load(name, json_dir)))
            done.append(name)
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)
    return done


if __name__ == "__main__":
    print(f"rewrote {', '.join(update()) or 'no block'} in {os.path.relpath(DOC, REPO)}")
