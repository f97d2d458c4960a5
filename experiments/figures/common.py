"""Shared machinery of the figure scripts: arms, running them, reading their metrics.

An *arm* is one training run: (label, preset, overrides, seed). Two arms with
the same (preset, overrides, seed) are the same run whatever their labels, so
several figures can share one run directory (``Arm.run_name``). Each arm runs
in its own Python process (``python experiments/run.py``) so that a crash in
one arm does not stop a sweep and its memory is returned to the system.

Reading runs back (``load_runs``) gives each arm's ``metrics.jsonl`` rows per
seed; aggregate.py summarises them.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Callable, Iterable, Mapping, Sequence

from crl_jax.training.run_dir import has_checkpoint
from crl_jax.training.warm_cache import EXTRACTOR_ONLY_WARM_START, extractor_neutral
from experiments.figures.start_check import mixed_starts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_SCRIPT = os.path.join(REPO, "experiments", "run.py")
FIGURES_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(FIGURES_DIR, "out")
DEFAULT_ROOT = os.path.join(FIGURES_DIR, "runs")  # the full budget's; records committed (publish.py)
BUDGETS = ("quick", "full", "paper")
METRICS = "metrics.jsonl"
# experiments/diagnostics/extractor_rl_gain.py's result for a run (the warm-started
# extractor against the run's last checkpoint, on the same inputs): measured
# from checkpoints, which stay local, so it is kept beside the metrics as
# part of the run's committed record.
RL_GAIN = "extractor_rl_gain.json"


def check_budget(budget: str) -> str:
    if budget not in BUDGETS:
        raise ValueError(f"budget={budget!r}; valid: {BUDGETS}")
    return budget


# --------------------------------------------------------------------------- #
# Arms
# --------------------------------------------------------------------------- #


def normalize_overrides(overrides: Iterable[str]) -> tuple[str, ...]:
    """'key=value' strings, one per key (the last one wins, as on the command
    line), sorted by key: equal settings give equal tuples whatever the order."""
    by_key: dict[str, str] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key.sub=value")
        key, value = item.split("=", 1)
        by_key[key.strip()] = value.strip()
    if "train.seed" in by_key:
        raise ValueError("set the seed with Arm(seed=...), not a train.seed override")
    if "train.out_dir" in by_key:
        raise ValueError("the run directory comes from the arm's name; drop train.out_dir")
    return tuple(f"{k}={by_key[k]}" for k in sorted(by_key))


@functools.lru_cache(maxsize=1)
def _first_names() -> dict[str, str]:
    """{key now: key as first spelled} for every moved key (RunConfig.MOVED_KEYS)."""
    from crl_jax.training.config import RunConfig
    return {new: first for first, new in RunConfig.MOVED_KEYS.items()}


def first_spelling(overrides: Iterable[str]) -> tuple[str, ...]:
    """Normalized overrides with every moved key under the name it had before
    it moved."""
    first = _first_names()
    renamed = []
    for item in overrides:
        key, _, value = item.partition("=")
        renamed.append(f"{first.get(key, key)}={value}")
    return normalize_overrides(renamed)


@dataclasses.dataclass(frozen=True)
class Arm:
    """One training run of a figure. ``label`` names it in plots only;
    ``est_s`` is a time estimate in seconds used for the ETA; ``alone`` makes
    a parallel sweep run it by itself. None of these is part of its key."""

    label: str
    preset: str
    overrides: tuple[str, ...] = ()
    seed: int = 0
    est_s: float = 0.0
    alone: bool = False  # it measures time: no other arm may run beside it

    def __post_init__(self):
        object.__setattr__(self, "overrides", normalize_overrides(self.overrides))
        if not self.preset or "/" in self.preset:
            raise ValueError(f"preset={self.preset!r} must be a preset name such as alfworld_cpu")

    @property
    def key(self) -> tuple:
        """What makes two arms the same run (the label does not)."""
        return (self.preset, self.overrides, int(self.seed))

    @property
    def run_name(self) -> str:
        # Hashed with each key as first spelled, so a key moved since (the
        # research controls' section) leaves every run its name and record.
        key = (self.preset, first_spelling(self.overrides), int(self.seed))
        digest = hashlib.sha1(json.dumps(key).encode()).hexdigest()[:10]
        return f"{self.preset}-s{self.seed}-{digest}"

    def command(self, out_dir: str, resume: bool = False, warm_cache: str = "",
                checkpoint_every: int = 0) -> list[str]:
        """The run.py command line. ``warm_cache`` (warm_start.cache_dir) is a
        place, not a setting, so it is not part of the arm's key: arms of one
        setting and seed then start from the same warm-started models.
        ``checkpoint_every`` > 0 overrides train.checkpoint_every, also outside
        the key: how often a run saves changes what a crash loses, not what
        it computes."""
        cmd = [sys.executable, RUN_SCRIPT, f"--config={self.preset}", f"--out_dir={out_dir}"]
        if resume:
            # The run was set aside if its settings differ from the arm's
            # (stale_settings); what may still differ is bookkeeping
            # (BOOKKEEPING_KEYS: the cache's place, how often it saves).
            cmd += ["--resume", "--accept_changed_config"]
            if not has_checkpoint(out_dir):  # it died before its first: from step 0
                cmd.append("--start_fresh")
        cache = [f"warm_start.cache_dir={warm_cache}"] if warm_cache else []
        if checkpoint_every < 0:
            raise ValueError(f"checkpoint_every={checkpoint_every} must be >= 0 (0: the preset's)")
        saves = [f"train.checkpoint_every={checkpoint_every}"] if checkpoint_every else []
        overrides = list(self.overrides) + cache + saves + [f"train.seed={self.seed}"]
        return cmd + [f"--{item}" for item in overrides]

    def with_label(self, label: str) -> "Arm":
        return dataclasses.replace(self, label=label)


def dedupe_arms(arms: Iterable[Arm]) -> list[Arm]:
    """One arm per run (first label kept), in first-seen order."""
    seen: dict[tuple, Arm] = {}
    for arm in arms:
        seen.setdefault(arm.key, arm)
    return list(seen.values())


def run_dir(arm: Arm, root: str) -> str:
    return os.path.join(root, arm.run_name)


def override_value(arm: Arm, key: str, default=None):
    for item in arm.overrides:
        k, v = item.split("=", 1)
        if k == key:
            return v
    return default


def expected_steps(arm: Arm) -> int:
    """train.steps of the arm: its override, else the preset's (loads the preset)."""
    value = override_value(arm, "train.steps")
    if value is not None:
        return int(float(value))
    from experiments.configs import load_preset  # heavy import, only when needed
    return int(load_preset(arm.preset).train.steps)


# --------------------------------------------------------------------------- #
# Running
# --------------------------------------------------------------------------- #


def read_rows(path: str) -> list[dict]:
    """The complete rows of a metrics.jsonl (a torn last line is skipped)."""
    from crl_jax.training.metrics import read_metrics
    return read_metrics(path)


def last_step(directory: str) -> int | None:
    path = os.path.join(directory, METRICS)
    if not os.path.exists(path):
        return None
    rows = read_rows(path)
    return max((int(r["step"]) for r in rows), default=None)


def is_finished(arm: Arm, root: str) -> bool:
    done = last_step(run_dir(arm, root))
    return done is not None and done >= expected_steps(arm)


# Settings that say where a run lives, how often it saves, or how the bank
# makes a snapshot visible, not what it computes: a run that differs from its
# arm only in these is the same run. (Every publish mode holds the same entries
# and statistics and, searched exactly, finds the same ones:
# tests/experience/test_delta_store.py compares delta with copy.)
BOOKKEEPING_KEYS = ("warm_start.cache_dir", "train.out_dir", "train.checkpoint_every",
                    "experience.bank.publish_mode", "experience.bank.delta_merge_at",
                    "experience.bank.delta_merge_fraction", "experience.bank.grace_timeout_s")


def arm_config(arm: Arm):
    """The arm's full RunConfig today (preset + overrides + seed); unknown keys raise."""
    from crl_jax.training.config_io import apply_overrides
    from experiments.configs import load_preset
    return apply_overrides(load_preset(arm.preset),
                           [*arm.overrides, f"train.seed={int(arm.seed)}"])


def stale_settings(arm: Arm, directory: str) -> list[str]:
    """The settings on which the run in ``directory`` (its config.json and its
    warm-start record) differs from what the arm resolves to today, as "key:
    then -> now"; empty when they agree or the run saved no config. A run name
    hashes the arm's overrides, not its preset, so a preset edited since the
    run would otherwise be silently mixed into figures with runs of the new
    one; likewise a warm start rebuilt by changed code (the key's version)."""
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        return []
    from crl_jax.training.config_io import flatten_config, load_config_json
    from crl_jax.training.config import RunConfig
    from crl_jax.training.warm_cache import key_in_scheme_of, recorded_warm_start
    cfg = arm_config(arm)
    now = flatten_config(cfg)
    try:
        then = flatten_config(load_config_json(RunConfig, path))
    except (ValueError, TypeError, KeyError) as err:
        return [f"config.json no longer loads ({err})"]
    key_then = recorded_warm_start(directory)
    key_now = key_in_scheme_of(key_then, cfg) if key_then else None
    if key_then and key_then != key_now and not cfg.experience.has_extractor:
        # An arm without an extractor starts from the same actor whatever the
        # extractor-only inputs are: a record from the key without them is as current.
        neutral = extractor_neutral(cfg)
        if key_in_scheme_of(key_then, neutral) == key_then:
            key_now = key_then
    warm = ([f"warm start: {key_then} -> {key_now}"]
            if key_then is not None and key_then != key_now else [])
    return warm + [f"{k}: {then.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(now) | set(then))
                   if k not in BOOKKEEPING_KEYS and not unread(k, now) and then.get(k) != now.get(k)]


HOUSEHOLD_KEYS = ("env.pool_households", "env.drawn_households", "env.unseen_households",
                  "env.home_rate")


def unread(key: str, flat: dict) -> bool:
    """Whether a run with these settings never reads ``key``: an arm without
    experience (the baseline) reads no experience.* setting but the mode, so
    retuning the experience pipeline or its controls leaves its runs valid; nor does an oracle
    arm (no bank, no extractor) read whether the pipeline is synchronous,
    any experience.extractor_* setting, the bank's settings or the merge's;
    neither arm loads the extractor, so neither reads its warm start's
    extractor-only settings (warm_cache.EXTRACTOR_ONLY_WARM_START). A run
    without households (env.households=0) reads none of their settings."""
    if key in HOUSEHOLD_KEYS and not flat.get("env.households"):
        return True
    mode = flat.get("experience.mode")
    if mode in ("none", "oracle") and key.removeprefix("warm_start.") in EXTRACTOR_ONLY_WARM_START:
        return True
    if mode == "oracle" and (key == "experience.sync" or key.startswith(
            ("experience.extractor_", "experience.bank.", "experience.merge"))):
        return True
    # The controls all concern experience (they were experience.* keys).
    return mode == "none" and (key.startswith(("experience.", "controls."))
                               and key != "experience.mode")


def set_aside_if_stale(arm: Arm, root: str, log: Callable[[str], None] = print) -> str | None:
    """Renames a run directory (and its record) made with other settings than
    the arm's today to <name>.stale-<time>, so the arm runs afresh; returns
    the new path, or None when nothing was stale."""
    out = run_dir(arm, root)
    diff = stale_settings(arm, out)
    if not diff:
        return None
    aside = f"{out}.stale-{time.strftime('%Y%m%d-%H%M%S')}"
    os.replace(out, aside)
    if os.path.exists(_record_path(arm, root)):
        os.replace(_record_path(arm, root), aside + ".arm.json")
    shown = "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
    log(f"{arm.run_name}: its settings changed since it ran ({shown}); "
        f"moved to {os.path.basename(aside)}, running it again")
    return aside


def _record_path(arm: Arm, root: str) -> str:
    return os.path.join(root, arm.run_name + ".arm.json")


def load_record(arm: Arm, root: str) -> dict:
    path = _record_path(arm, root)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write_json(path: str, data) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, allow_nan=True)
    os.replace(tmp, path)


@dataclasses.dataclass
class ArmResult:
    arm: Arm
    status: str  # "skipped" (already finished) | "done" | "failed"
    wall_s: float
    returncode: int | None = None


def skip_if_finished(arm: Arm, root: str,
                     log: Callable[[str], None] = print) -> ArmResult | None:
    """A "skipped" result when the arm's run already finished with today's
    settings (a stale run is set aside first), else None."""
    set_aside_if_stale(arm, root, log)
    return ArmResult(arm, "skipped", 0.0, 0) if is_finished(arm, root) else None


def run_arm(arm: Arm, root: str, timeout_s: float | None = None,
            runner: Callable[..., subprocess.CompletedProcess] = subprocess.run,
            warm_cache: str | None = None, checkpoint_every: int = 0,
            env_extra: Mapping[str, str] | None = None) -> ArmResult:
    """Runs one arm in a subprocess unless its run directory already holds a
    finished metrics.jsonl. An unfinished run with a checkpoint is resumed
    (--resume), and so is one that died before its first checkpoint (from step 0);
    one that never started starts afresh. A
    run made with other settings than the arm's today is set aside first.
    Warm starts are shared through <root>/warm_start_cache unless
    ``warm_cache`` says otherwise ("" = none). Output goes to <run dir>/run.log;
    <root>/<run name>.arm.json records the arm, its command and every
    attempt's wall time. ``checkpoint_every``: see Arm.command. ``env_extra``:
    variables set for the run's process (sweep.job_environment)."""
    out = run_dir(arm, root)
    skipped = skip_if_finished(arm, root)
    if skipped:
        return skipped
    os.makedirs(out, exist_ok=True)
    # A run that started here (config.json) is resumed: from its checkpoint,
    # or before its first one from step 0 with its warm start's progress.
    resume = has_checkpoint(out) or os.path.exists(os.path.join(out, "config.json"))
    if not resume and os.path.exists(os.path.join(out, METRICS)):
        os.remove(os.path.join(out, METRICS))  # rows of a run that died before its first checkpoint
    if warm_cache is None:
        warm_cache = os.path.join(os.path.abspath(root), "warm_start_cache")
    cmd = arm.command(out, resume, warm_cache, checkpoint_every)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env_extra or {}))
    start = time.perf_counter()
    with open(os.path.join(out, "run.log"), "a", encoding="utf-8") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        try:
            proc = runner(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
                          timeout=timeout_s, check=False)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = -9
    wall = time.perf_counter() - start
    finished = code == 0 and is_finished(arm, root)
    record = load_record(arm, root)
    attempts = record.get("attempts", []) + [{"wall_s": wall, "returncode": code,
                                              "resumed": resume, "finished": finished,
                                              "ended": time.strftime("%Y-%m-%d %H:%M:%S")}]
    _write_json(_record_path(arm, root), {
        "label": arm.label, "preset": arm.preset, "overrides": list(arm.overrides),
        "seed": arm.seed, "run_dir": out, "command": cmd, "attempts": attempts,
        "wall_s": sum(a["wall_s"] for a in attempts), "finished": finished})
    return ArmResult(arm, "done" if finished else "failed", wall, code)


# --------------------------------------------------------------------------- #
# Reading runs
# --------------------------------------------------------------------------- #


def _rows_last_step(rows: Sequence[Mapping]) -> int:
    return max(int(r["step"]) for r in rows)


def is_short(arm: Arm, rows: Sequence[Mapping]) -> bool:
    """True for a run (its metric rows) that stopped before the arm's last step."""
    return _rows_last_step(rows) < expected_steps(arm)


def shown_path(path: str) -> str:
    """A path as documents show it: relative to the repository when inside it."""
    rel = os.path.relpath(os.path.abspath(path), REPO)
    return path if rel.startswith("..") else rel


def load_runs(arms: Sequence[Arm], root: str) -> tuple[dict[str, dict[int, list]], list[str]]:
    """{label: {seed: rows}} for arms with a metrics.jsonl, and notes naming
    the missing ones; a run made with other settings than the arm's today is
    left out (and named), not drawn as if it were the arm; a run still going
    (or stopped early) is drawn up to where it got, and named; arms of one
    seed and warm-start key that did not start from the same actor are named
    too (start_check)."""
    out: dict[str, dict[int, list]] = {}
    missing, drawn = [], []
    for arm in arms:
        where = run_dir(arm, root)
        path = os.path.join(where, METRICS)
        rows = read_rows(path) if os.path.exists(path) else []
        stale = stale_settings(arm, where) if rows else []
        if stale:
            missing.append(f"{arm.label} (seed {arm.seed}): {shown_path(where)} was made with "
                           f"other settings ({'; '.join(stale[:3])}); rerun it")
        elif rows:
            out.setdefault(arm.label, {})[arm.seed] = rows
            drawn.append((arm.label, arm.seed, where, rows))
            if is_short(arm, rows):
                missing.append(f"{arm.label} (seed {arm.seed}): unfinished, step "
                               f"{_rows_last_step(rows)} of {expected_steps(arm)}: its last numbers "
                               f"are not final")
        else:
            missing.append(f"{arm.label} (seed {arm.seed}): no metrics in {shown_path(where)}")
    return out, missing + mixed_starts(drawn)


def wall_times(arms: Sequence[Arm], root: str) -> dict[str, float]:
    return {a.run_name: load_record(a, root).get("wall_s", float("nan")) for a in dedupe_arms(arms)}


def save_json(path: str, data) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _write_json(path, data)
