"""Plot helpers: every figure is written as <stem>.png and <stem>.json, and the
JSON holds every number that the PNG draws (so tables and checks never read
pixels). Matplotlib runs headless (Agg)."""
from __future__ import annotations

import math
import os
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.figures.common import save_json


def _grid(n: int, cols: int = 3) -> tuple[int, int]:
    cols = max(1, min(n, cols))
    return math.ceil(n / cols), cols


def _colors(labels) -> dict[str, str]:
    """One colour per label across all panels of a figure (first-seen order)."""
    out: dict[str, str] = {}
    for label in labels:
        out.setdefault(label, f"C{len(out) % 10}")
    return out


DPI = 110
# A figure of many panels (the households study draws one row per group) is
# drawn coarser past this many pixels, so its PNG stays well under 2 MiB in
# the repository; every smaller figure keeps DPI.
MAX_PIXELS = 4_000_000


def _finish(fig, stem: str, data: dict) -> dict:
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    fig.tight_layout()
    width, height = fig.get_size_inches()
    fig.savefig(stem + ".png", dpi=min(DPI, math.sqrt(MAX_PIXELS / (width * height))))
    plt.close(fig)
    save_json(stem + ".json", data)
    return data


def plot_curves(stem: str, title: str, panels: Sequence[Mapping], cols: int = 3) -> dict:
    """Line plots over training steps. Each panel: {"title", "ylabel", "series":
    {label: seed_curves(...)}}; a line is the mean over seeds, the band its min..max."""
    if not panels:
        raise ValueError(f"{stem}: no panels to plot")
    rows, cols = _grid(len(panels), cols)
    colors = _colors(label for p in panels for label in p["series"])
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        for label, c in panel["series"].items():
            n = len(c["seeds"])
            ax.plot(c["steps"], c["mean"], marker="o", ms=3, color=colors[label],
                    label=f"{label} (n={n})")
            if n > 1:
                ax.fill_between(c["steps"], c["min"], c["max"], color=colors[label], alpha=0.2)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(panel["title"], fontsize=10)
        ax.set_xlabel(panel.get("xlabel", "RL step"))
        ax.set_ylabel(panel.get("ylabel", ""))
        ax.grid(alpha=0.3)
        if panel["series"]:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no finished runs", ha="center", transform=ax.transAxes)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    return _finish(fig, stem, {"title": title, "kind": "curves", "panels": list(panels)})


def plot_bars(stem: str, title: str, panels: Sequence[Mapping]) -> dict:
    """Bar charts. Each panel: {"title", "ylabel", "bars": {label: seed_finals(...)}};
    a bar is the mean over seeds, the whisker its min..max, dots the seeds."""
    if not panels:
        raise ValueError(f"{stem}: no panels to plot")
    rows, cols = _grid(len(panels))
    colors = _colors(label for p in panels for label in p["bars"])
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 3.6 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        labels = list(panel["bars"])
        for i, label in enumerate(labels):
            b = panel["bars"][label]
            ax.bar(i, b["mean"], color=colors[label], alpha=0.75)
            ax.errorbar(i, b["mean"], yerr=[[b["mean"] - b["min"]], [b["max"] - b["mean"]]],
                        color="black", capsize=3)
            seeds = list(b["per_seed"].values())
            ax.scatter([i] * len(seeds), seeds, color="black", s=8, zorder=3)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=7)
        ax.set_title(panel["title"], fontsize=10)
        ax.set_ylabel(panel.get("ylabel", ""))
        ax.grid(alpha=0.3, axis="y")
        if not labels:
            ax.text(0.5, 0.5, "no finished runs", ha="center", transform=ax.transAxes)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    return _finish(fig, stem, {"title": title, "kind": "bars", "panels": list(panels)})


def plot_xy(stem: str, title: str, xlabel: str, ylabel: str,
            series: Mapping[str, Mapping[str, Sequence[float]]]) -> dict:
    """One panel of lines over a numeric x (e.g. latency against batch size).
    series: {label: {"x": [...], "y": [...]}}."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, s in series.items():
        if len(s["x"]) != len(s["y"]):
            raise ValueError(f"{stem}: series {label!r} has {len(s['x'])} x and {len(s['y'])} y")
        ax.plot(s["x"], s["y"], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    return _finish(fig, stem, {"title": title, "kind": "xy", "xlabel": xlabel, "ylabel": ylabel,
                               "series": {k: dict(v) for k, v in series.items()}})
