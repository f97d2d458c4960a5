"""Run directories: a new run never overwrites an old one, and a resumed run
continues with the configuration it started with (or says what changed)."""
from __future__ import annotations

import os
import shutil

from crl_jax.training import config_io
from crl_jax.training.config import RunConfig

CONFIG_FILENAME = "config.json"
# What makes a directory a run's: any of these (a figure sweep's run.log or
# a warm-start record alone does not).
RUN_FILES = (CONFIG_FILENAME, "metrics.jsonl", "checkpoints")
# An unfinished warm start's progress, when the run has no warm-start cache
# (crl_jax/training/warm_stage.py progress_dir).
WARM_PROGRESS = "warm_start_progress"


class RunDirError(ValueError):
    """The run directory cannot be used as asked; the message says what to do."""


def has_checkpoint(out_dir: str) -> bool:
    """Whether the run in ``out_dir`` saved a checkpoint (a finished step
    directory: Orbax renames a step's temporary directory when it is whole)."""
    ckpt = os.path.join(out_dir, "checkpoints")
    return os.path.isdir(ckpt) and any(name.isdigit() for name in os.listdir(ckpt))


def trained(out_dir: str) -> bool:
    """Whether the run in ``out_dir`` did work a retry would lose: a
    checkpoint, a step's metrics, or warm-start progress."""
    return (has_checkpoint(out_dir) or os.path.exists(os.path.join(out_dir, "metrics.jsonl"))
            or os.path.isdir(os.path.join(out_dir, WARM_PROGRESS)))


def entries(out_dir: str) -> frozenset | None:
    """What ``out_dir`` holds before a new run starts there (None: it does not exist)."""
    return frozenset(os.listdir(out_dir)) if os.path.isdir(out_dir) else None


def discard_untrained(out_dir: str, before: frozenset | None) -> bool:
    """After a new run failed: if it trained nothing, removes what it wrote
    (the directory itself if it made it), so the same command, fixed, runs
    again without flags; True if it did. A run that trained stays for --resume."""
    if not os.path.isdir(out_dir) or trained(out_dir):
        return False
    if before is None:
        shutil.rmtree(out_dir, ignore_errors=True)
        return True
    for name in set(os.listdir(out_dir)) - before:
        path = os.path.join(out_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    return True


def holds_a_run(out_dir: str) -> bool:
    return any(os.path.exists(os.path.join(out_dir, name)) for name in RUN_FILES)


def _changed_config(cfg: RunConfig, path: str, accept: bool) -> None:
    try:
        saved = config_io.load_config_json(RunConfig, path)
    except ValueError as err:
        raise RunDirError(f"{path} does not load as a configuration of this version ({err}). "
                          "Start a new run in another directory.") from None
    diff = config_io.config_diff(saved, cfg)
    if diff and not accept:
        raise RunDirError(
            f"--resume: the configuration differs from the one the run in "
            f"{os.path.dirname(path)} started with: {'; '.join(diff)}. Resume with the same "
            "settings, or add --accept_changed_config to continue with the new values.")


def prepare_run_dir(cfg: RunConfig, out_dir: str, resume: bool = False,
                    accept_changed_config: bool = False, start_fresh: bool = False) -> str:
    """Checks ``out_dir`` against the request and writes config.json (every
    effective setting, the run directory included as train.out_dir);
    returns the path of config.json. Raises RunDirError before any work.
    ``start_fresh``: --resume of a run that saved no checkpoint trains it
    again from step 0 (else that is an error: nothing would be resumed)."""
    path = os.path.join(out_dir, CONFIG_FILENAME)
    if resume:
        if not os.path.exists(path):
            raise RunDirError(f"--resume: {out_dir} holds no run to resume (no {CONFIG_FILENAME}). "
                              "Check the path, or start the run without --resume.")
        _changed_config(cfg, path, accept_changed_config)
        if not start_fresh and not has_checkpoint(out_dir):
            raise RunDirError(
                f"--resume: the run in {out_dir} saved no checkpoint yet (it stopped before its "
                f"first; train.checkpoint_every={cfg.train.checkpoint_every}), so there is nothing "
                "to resume. Add --start_fresh to train it again from step 0 (warm-start progress "
                "saved by the run is kept and continued).")
    elif holds_a_run(out_dir):
        raise RunDirError(f"{out_dir} already holds a run. To continue it, add --resume; to "
                          "start a new one, choose another directory with --out_dir=DIR "
                          "(or delete this one).")
    os.makedirs(out_dir, exist_ok=True)
    tmp = path + ".tmp"
    config_io.save_config_json(cfg, tmp)
    os.replace(tmp, path)
    return path
