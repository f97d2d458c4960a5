"""Households (not a figure of the paper): does experience that transfers
between games pay? On alfworld_households_cpu (rooms whose objects lie at
their homes; crl_jax/envs/alfworld_households.py) the controls come first,
from one warm start per seed: no experience (GRPO) and the oracle lesson
(the household's true homes of the goal's type as the entry). If the
oracle does not train clearly above GRPO, no bank can, and the regime is
what needs changing. Then the learned bank (Comp. RL) beside them, and its
controls: Comp. RL reading another household's lessons
(controls.lesson_room=other: no gain or harm if the gain is transfer), the
bank built from the same trajectories by a perfect reader
(controls.lesson_reader=rule: the extractor's oracle), and
Comp. RL and GRPO where objects have no homes (env.home_rate=0, their own
warm starts: the gain must vanish); Static Online (a fixed extractor) for
the co-evolution claim, with the bank's lesson accuracy against the
households' true homes (lessons/first_home) through RL. Other regimes
beside the preset's: 40 RL steps; RL on two of the pool's households
(env.drawn_households=2: each room gets four times the games); lessons
that keep their votes through merges (experience.merger=lesson_votes);
objects at a home four times in five (env.home_rate=0.8), the warm start
on the preset's 32 households or on 200, the latter with the learned arms
and their extractor taught on a wandering expert's episodes
(warm_start.extractor_wanders) or writing greedily, again with the
actor also taught on lessons as one game shows them (lessonseen), and
again with the walks its lessons name repeated in its warm start
(warm_start.line_repeat=4), and the actor taught one-home lessons
(lessonfirst), with the learned arms' extractor taught also on the
warm-started actor's own episodes (warm_start.extractor_actor_episodes),
there and on games where nothing has a home
(warm_start.extractor_home_rate=0), 3x as long or 4 layers deep, the
rule reader merging by where the type was found and where it was looked
for in vain (experience.merger=lesson_evidence), and the controls where
objects have no homes at all (not yet run).

The ladder table is the oracle ladder's (guided / free success per window,
actions, training success over every step against GRPO's, per seed); a
second table gives held-out success on new games of the pool's households
(eval_*, the run's standard metrics) and on households no training touched
(eval_unseen_*), without / with experience, and the bank's lessons; a
third sets each arm against its GRPO seed by seed (seed_pairs.py): how
many seeds its margin, or the bars' 1.2x, would need; a fourth follows
the bank's lesson accuracy through RL for Static Online and the learned
arms beside it.

    python experiments/figures/reproduce.py --budget=full --only=households

Full budget only (the quick budget's hour has no room for its runs).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from crl_jax.training.run_summary import series
from experiments.figures import common
from experiments.figures.ablation import variant_arms
from experiments.figures.script import figure_main, fmt
from experiments.studies import seed_pairs
from experiments.studies.household_arms import GROUPS, HEADING, NAME, ORACLE, PRESET, RULE
from experiments.studies.oracle_ladder import groups_arms, groups_figure

def arms(budget: str) -> list:
    return groups_arms(PRESET, budget, *(variants for variants, _ in GROUPS))


def _last(rows, key: str) -> float:
    values = series(rows, key)
    return values[-1] if values else float("nan")


def _per_seed(runs: dict, key: str) -> str:
    """Seed mean (per seed) of the last evaluation's ``key``."""
    vals = [_last(rows, key) for _, rows in sorted(runs.items())]
    if not vals or all(v != v for v in vals):
        return "-"
    return f"{fmt(float(np.nanmean(vals)))} ({', '.join(fmt(v) for v in vals)})"


def _writes(arms, root: str, keys) -> list[str]:
    """For each of ``keys``, its seed mean (per seed) in the runs'
    lesson_writes.json ("greedy.warm.right": a key of a key of a key);
    each file read once."""
    per_key: list[list[float]] = [[] for _ in keys]
    for arm in sorted(arms, key=lambda a: a.seed):
        path = os.path.join(common.run_dir(arm, root), "lesson_writes.json")
        record = {}
        if os.path.exists(path):
            with open(path) as f:
                record = json.load(f)
        for vals, key in zip(per_key, keys):
            value = record
            for part in key.split("."):
                value = value.get(part, float("nan")) if isinstance(value, dict) else float("nan")
            vals.append(float(value))
    return ["-" if not vals or all(v != v for v in vals) else
            f"{fmt(float(np.nanmean(vals)))} ({', '.join(fmt(v) for v in vals)})" for vals in per_key]


def _loaded(budget: str, root: str) -> list[tuple]:
    """(variants, title, arms, {label: {seed: rows}}, notes) of each group."""
    out = []
    for variants, title in GROUPS:
        arms = variant_arms(PRESET, budget, variants)
        out.append((variants, title, arms, *common.load_runs(arms, root)))
    return out


def held_out_table(budget: str, root: str, notes: list, loaded: list | None = None) -> dict:
    """Held-out success, seen and unseen households, and the bank's lessons
    (``loaded``: _loaded's records, read here when not given)."""
    rows = []
    for variants, title, arms, runs, more in loaded or _loaded(budget, root):
        notes += more
        for v in variants:
            mine = runs.get(v.label, {})
            cells = [_per_seed(mine, k) for k in (
                "eval_no_exp/success", "eval_with_exp/success", "eval_unseen_no_exp/success",
                "eval_unseen_with_exp/success", "lessons/first_home", "lessons/coverage")]
            drawn = [a for a in arms if a.label == v.label and a.seed in mine]
            cells += _writes(drawn, root, ("right", "invented"))
            rows.append([f"{v.label} ({title})", ", ".join(str(s) for s in sorted(mine)) or "-",
                         *cells])
    return {"caption": "Held-out success at the last evaluation: new games of the pool's "
                       "households (seen) and games of 8 households no training touched "
                       "(unseen), without / with experience; the bank's lessons about the "
                       "pool's households: share whose first home is the household's first "
                       "home, and share of the pool's (room, goal type) pairs with a lesson; "
                       "the lessons the extractor wrote in RL (replies that wrote, at the "
                       "last checkpoint: experiments/diagnostics/lesson_writes.py --save): "
                       "share right about what the trajectory shows, and share invented "
                       "where it shows no pick-up. Seed mean (per seed).",
            "columns": ["arm", "seeds", "seen, no exp.", "seen, with exp.", "unseen, no exp.",
                        "unseen, with exp.", "lessons: first home right", "lessons: coverage",
                        "writes: right", "writes: invented"],
            "rows": rows}


def paired_table(loaded: list) -> dict:
    """Each arm against its group's GRPO seed by seed (seed_pairs.py), with
    every oracle-lesson and every rule-reader pair pooled over the groups."""
    pairs = []
    for variants, title, _, runs, _ in loaded:
        reference = runs.get(variants[-1].label, {})
        pairs += [(f"{v.label} ({title})", runs.get(v.label, {}), reference)
                  for v in variants[:-1]]
    return seed_pairs.table(pairs, {"every oracle-lesson arm": ORACLE,
                                    "every rule-reader arm": RULE})


def coevolution_table(loaded: list, root: str) -> dict:
    """The co-evolution claim: in each group that holds Static Online Exp.
    (its extractor fixed), the share of the bank's lessons that name the
    household's first home at each logged step, for it and for the group's
    learned arms (their extractor trained through RL), and, on the same
    prompts, how right the warm-started and the last checkpoint's
    extractor answer and how many they answer differently
    (lesson_writes.py --greedy --save). Seed mean (per seed at the last
    step)."""
    rows, steps = [], set()
    for variants, title, arms, runs, _ in loaded:
        if not any(v.label.startswith("Static Online") for v in variants):
            continue
        for v in variants:
            mine = runs.get(v.label, {})
            if v.mode not in ("comp_rl", "static_online") or RULE in v.label or not mine:
                continue
            by_step = {}
            for rows_ in mine.values():
                for r in rows_:
                    if "lessons/first_home" in r:
                        by_step.setdefault(r["step"], []).append(float(r["lessons/first_home"]))
            steps |= set(by_step)
            drawn = [a for a in arms if a.label == v.label and a.seed in mine]
            rows.append((f"{v.label} ({title})", by_step, _per_seed(mine, "lessons/first_home"),
                         _writes(drawn, root, ("greedy.warm.right", "greedy.last.right",
                                               "greedy.changed"))))
    steps = sorted(steps)
    return {"caption": "Lesson accuracy through RL (the paper's co-evolution claim): share of "
                       "the bank's lessons about the pool's households whose first home is the "
                       "household's first home, at each step it was measured, for Static Online "
                       "(extractor fixed) and the learned arms of its group (extractor trained); "
                       "on the same prompts (the last checkpoint's consolidation prompts, "
                       "300 spread evenly: experiments/diagnostics/lesson_writes.py --greedy "
                       "--limit=300 --save), the share of greedy replies right about what the "
                       "trajectory shows by the warm-started and by the last checkpoint's "
                       "extractor, and the share the two answer differently. Seed mean "
                       "(per seed).",
            "columns": ["arm", *(f"step {s}" for s in steps), "last, per seed",
                        "same prompts: warm right", "same prompts: last right",
                        "same prompts: answered differently"],
            "rows": [[label, *(fmt(float(np.mean(b[s]))) if s in b else "-" for s in steps), last,
                      *greedy] for label, b, last, greedy in rows]}


def _tables(budget: str, root: str, notes: list) -> list[dict]:
    loaded = _loaded(budget, root)  # the records read once for every table
    return [held_out_table(budget, root, notes, loaded), paired_table(loaded),
            coevolution_table(loaded, root)]


def make(root: str, budget: str, out_dir: str) -> list[dict]:
    return groups_figure(NAME, HEADING, f"{HEADING} ({PRESET}; mean over seeds, band min..max)",
                         PRESET, budget, root, out_dir, GROUPS,
                         lambda notes: _tables(budget, root, notes))


if __name__ == "__main__":
    figure_main(sys.modules[__name__])
