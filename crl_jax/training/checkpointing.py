"""Run checkpoints with Orbax: device pytrees, host state and extra files per step.

One step directory holds
    tree_<name>/   one Orbax StandardSave item per named pytree (params,
                   optimiser states, rng keys), restored onto given shardings
    host_state/    a JSON dict (step counters, data-iterator positions, RNG states)
    files/<name>   whatever a callback wrote (e.g. the experience bank)
    manifest/      JSON: which trees and files the step holds

Atomicity: Orbax writes a step into a temporary directory and renames it
when every item is committed, so a killed save never becomes `latest_step()`.
File callbacks run *before* Orbax is involved, into a staging directory
beside the steps; their output is moved into the step's temporary directory
by a small handler. A callback that raises therefore aborts the save with
nothing written, and the previous checkpoint stays latest.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import uuid
from typing import Any, Callable, Mapping

import jax
import orbax.checkpoint as ocp
from etils import epath

_NAME_RE = re.compile(r"^[A-Za-z0-9_\-]+$")
_STAGING_PREFIX = "_staging_files_"  # must not look like a step or an Orbax tmp dir
_MANIFEST_VERSION = 1


# --------------------------------------------------------------------------- #
# An Orbax item that adopts files already written into a staging directory
# --------------------------------------------------------------------------- #


class _StagedFilesHandler(ocp.CheckpointHandler):
    """Moves staged files into the item directory; restore returns their paths."""

    def save(self, directory: epath.Path, args: "StagedFilesSave") -> None:
        if jax.process_index() != 0:
            return
        for name in args.names:
            os.replace(os.path.join(args.staging_dir, name), os.path.join(str(directory), name))
        shutil.rmtree(args.staging_dir, ignore_errors=True)

    def restore(self, directory: epath.Path, args: "StagedFilesRestore | None" = None) -> str:
        return str(directory)  # the manifest says which names to expect in it


@ocp.args.register_with_handler(_StagedFilesHandler, for_save=True)
@dataclasses.dataclass
class StagedFilesSave(ocp.args.CheckpointArgs):
    staging_dir: str
    names: tuple[str, ...]


@ocp.args.register_with_handler(_StagedFilesHandler, for_restore=True)
@dataclasses.dataclass
class StagedFilesRestore(ocp.args.CheckpointArgs):
    pass


# --------------------------------------------------------------------------- #
# The public checkpointer
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class RestoredCheckpoint:
    step: int
    trees: dict[str, Any]        # name -> pytree of jax arrays
    host_state: dict[str, Any]   # the JSON dict given to save()
    files: dict[str, str]        # name -> path inside the (final) step directory


def abstract_like(tree: Any) -> Any:
    """ShapeDtypeStruct pytree with each leaf's sharding: a restore target."""
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree
    )


def _check_name(kind: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"{kind} name {name!r} must be non-empty and use only letters, digits, '_' or '-'"
        )


class RunCheckpointer:
    """Saves and restores whole-run state at integer steps; keeps the last `keep`.

    `save()` returns once device arrays are copied to host and file callbacks
    have run; the write to disk finishes in the background (`wait()` blocks
    until it has; `restore`, `latest_step` and `close` wait too).
    """

    def __init__(self, directory: str, keep: int = 3, async_save: bool = True):
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self._clean_staging()
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep,
                create=True,
                cleanup_tmp_directories=True,  # leftovers of killed saves
                enable_async_checkpointing=async_save,
            ),
        )

    def _clean_staging(self) -> None:
        if jax.process_index() != 0:
            return
        for entry in os.listdir(self.directory):
            if entry.startswith(_STAGING_PREFIX):
                shutil.rmtree(os.path.join(self.directory, entry), ignore_errors=True)

    def save(
        self,
        step: int,
        trees: Mapping[str, Any],
        host_state: Mapping[str, Any] | None = None,
        files: Mapping[str, Callable[[str], None]] | None = None,
    ) -> None:
        """Saves a checkpoint at `step`.

        trees: name -> pytree of jax arrays (each becomes one Orbax item).
        host_state: a JSON-serialisable dict (snapshotted now).
        files: name -> callable(path) that writes a file or directory at
            `path` (which does not exist yet); runs synchronously, on
            process 0 only. If one raises, nothing is saved and the error
            propagates.
        """
        step = int(step)
        files = dict(files or {})
        host_json = self._check_new_step(step, trees, files, host_state)
        staging = self._stage_files(step, files)
        manifest = {
            "version": _MANIFEST_VERSION,
            "trees": sorted(trees),
            "files": sorted(files),
        }
        items: dict[str, ocp.args.CheckpointArgs] = {
            "manifest": ocp.args.JsonSave(manifest),
            "host_state": ocp.args.JsonSave(host_json),
            "files": StagedFilesSave(staging, tuple(sorted(files))),
        }
        for name, tree in trees.items():
            items[f"tree_{name}"] = ocp.args.StandardSave(tree)
        try:
            self._manager.save(step, args=ocp.args.Composite(**items), force=True)
        finally:
            if jax.process_index() == 0 and os.path.exists(staging):
                shutil.rmtree(staging, ignore_errors=True)

    def _check_new_step(
        self,
        step: int,
        trees: Mapping[str, Any],
        files: Mapping[str, Callable[[str], None]],
        host_state: Mapping[str, Any] | None,
    ) -> dict:
        """Checks the names and that `step` is new; returns a JSON snapshot of
        `host_state` (taken now: the caller may mutate its dict after save)."""
        for name in trees:
            _check_name("Tree", name)
        for name in files:
            _check_name("File", name)
        if step in self.all_steps():
            raise ValueError(
                f"A checkpoint for step {step} already exists in {self.directory}"
            )
        try:
            return json.loads(json.dumps(dict(host_state or {})))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"host_state must be JSON-serialisable: {exc}") from exc

    def _stage_files(self, step: int, files: Mapping[str, Callable[[str], None]]) -> str:
        """Runs the file callbacks (process 0) into a fresh staging directory
        and returns its path; a callback that raises or writes nothing
        removes it and aborts the save."""
        staging = os.path.join(self.directory, f"{_STAGING_PREFIX}{step}_{uuid.uuid4().hex}")
        if jax.process_index() == 0:
            os.makedirs(staging)
            try:
                for name, write in files.items():
                    path = os.path.join(staging, name)
                    write(path)
                    if not os.path.exists(path):
                        raise ValueError(f"File callback {name!r} wrote nothing at {path}")
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return staging

    def wait(self) -> None:
        """Blocks until background writes are on disk (raises their errors)."""
        self._manager.wait_until_finished()

    def all_steps(self) -> list[int]:
        self.wait()
        return sorted(self._manager.all_steps())

    def latest_step(self) -> int | None:
        self.wait()
        return self._manager.latest_step()

    def restore(
        self,
        step: int | None = None,
        targets: Mapping[str, Any] | None = None,
    ) -> RestoredCheckpoint:
        """Restores `step` (default: the latest).

        targets: name -> abstract pytree (jax.ShapeDtypeStruct leaves with
            .sharding, see `abstract_like`) or concrete arrays; each array lands
            on the target's sharding. Trees without a target come back on the
            shardings they were saved with.
        """
        self.wait()
        if step is None:
            step = self._manager.latest_step()
            if step is None:
                raise FileNotFoundError(f"No checkpoint in {self.directory}")
        available = self._manager.all_steps()
        if step not in available:
            raise FileNotFoundError(
                f"No checkpoint for step {step} in {self.directory}; available steps: "
                f"{sorted(available)}"
            )
        manifest = self._manager.restore(
            step, args=ocp.args.Composite(manifest=ocp.args.JsonRestore())
        )["manifest"]
        targets = dict(targets or {})
        unknown = sorted(set(targets) - set(manifest["trees"]))
        if unknown:
            raise ValueError(
                f"Restore targets {unknown} are not in checkpoint step {step}; "
                f"it holds trees {manifest['trees']}"
            )
        items: dict[str, ocp.args.CheckpointArgs] = {
            "host_state": ocp.args.JsonRestore(),
            "files": StagedFilesRestore(),
        }
        for name in manifest["trees"]:
            target = targets.get(name)
            if target is not None:
                target = abstract_like(target)
            items[f"tree_{name}"] = ocp.args.StandardRestore(target)
        restored = self._manager.restore(step, args=ocp.args.Composite(**items))
        return RestoredCheckpoint(
            step=int(step),
            trees={name: restored[f"tree_{name}"] for name in manifest["trees"]},
            host_state=dict(restored["host_state"]),
            files={name: os.path.join(restored["files"], name) for name in manifest["files"]},
        )

    def close(self) -> None:
        """Waits for pending writes and releases Orbax's threads."""
        self._manager.wait_until_finished()
        self._manager.close()

    def __enter__(self) -> "RunCheckpointer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def python_rng_state_to_json(state: tuple) -> list:
    """`random.getstate()` as nested lists (JSON has no tuples)."""
    version, internal, gauss_next = state
    return [version, list(internal), gauss_next]


def python_rng_state_from_json(data: list) -> tuple:
    """Inverse of python_rng_state_to_json, ready for `random.setstate()`."""
    version, internal, gauss_next = data
    return (version, tuple(internal), gauss_next)
