"""ALFWorld game records: the compact pack, the standard data layout, and
turning a record into a playable game folder.

A game is fully described by its PDDL problem and its task sentence; the
PDDL domain and the text grammar are the same for every game and ship with
the ``alfworld`` package (0.4.2). So a record keeps only the per-game parts:

* the compact pack (``games-<split>.jsonl.gz``, one JSON record a line), found
  at ``$CRL_ALFWORLD_PACK`` or ``<repo>/../shared/alfworld``;
* the standard layout that ``alfworld-download`` leaves under
  ``$ALFWORLD_DATA/json_2.1.1/<split>/<task-folder>/<trial>/`` (``game.tw-pddl``
  + ``traj_data.json``), read with the same filters as ALFWorld's own game
  collection.

``materialise`` writes a record back as a standard trial folder built with
the packaged 0.4.2 domain and grammar, which the real engine loads.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import os
import re
from pathlib import Path
from typing import Iterator

SPLITS = ("train", "valid_seen", "valid_unseen")
SPLIT_SIZES = {"train": 3553, "valid_seen": 140, "valid_unseen": 134}
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
_REPO_ROOT = Path(__file__).resolve().parents[2]
_TASK_LINE = re.compile(r"Your task is to: (.*)\.")


@dataclasses.dataclass(frozen=True)
class GameRecord:
    """One ALFWorld game: everything that differs from game to game.

    Attributes:
      id: trial folder relative to the data root,
        ``json_2.1.1/<split>/<task-folder>/<trial>``.
      split: train, valid_seen or valid_unseen ("generated" for games made
        by alfworld_generator).
      task_type: one of TASK_TYPES.
      task: the task sentence (after "Your task is to: ", no final period).
      pddl_params: traj_data's object/parent/toggle/mrecep targets, as sorted
        (key, value) pairs so the record stays hashable.
      pddl_problem: the PDDL problem text.
    """

    id: str
    split: str
    task_type: str
    task: str
    pddl_params: tuple[tuple[str, object], ...]
    pddl_problem: str

    @property
    def params(self) -> dict:
        return dict(self.pddl_params)

    @classmethod
    def from_json(cls, data: dict) -> "GameRecord":
        missing = {"id", "split", "task_type", "task", "pddl_params", "pddl_problem"} - set(data)
        if missing:
            raise ValueError(f"ALFWorld record lacks fields {sorted(missing)}; has {sorted(data)}")
        if data["task_type"] not in TASK_TYPES:
            raise ValueError(f"unknown task_type {data['task_type']!r}; valid: {TASK_TYPES}")
        return cls(
            id=data["id"],
            split=data["split"],
            task_type=data["task_type"],
            task=data["task"],
            pddl_params=tuple(sorted(data["pddl_params"].items())),
            pddl_problem=data["pddl_problem"],
        )

    def to_json(self) -> dict:
        return {
            "id": self.id, "split": self.split, "task_type": self.task_type,
            "task": self.task, "pddl_params": self.params, "pddl_problem": self.pddl_problem,
        }


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown ALFWorld split {split!r}; valid: {SPLITS}")


def default_pack_dir() -> Path:
    """$CRL_ALFWORLD_PACK if set, else <repo>/../shared/alfworld."""
    env = os.environ.get("CRL_ALFWORLD_PACK")
    return Path(env) if env else _REPO_ROOT.parent / "shared" / "alfworld"


def pack_path(split: str, pack_dir: str | Path | None = None) -> Path:
    _check_split(split)
    return Path(pack_dir or default_pack_dir()) / f"games-{split}.jsonl.gz"


def pack_available(split: str = "valid_unseen", pack_dir: str | Path | None = None) -> bool:
    return pack_path(split, pack_dir).is_file()


def iter_pack(split: str, pack_dir: str | Path | None = None) -> Iterator[GameRecord]:
    path = pack_path(split, pack_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"ALFWorld pack {path} not found: set $CRL_ALFWORLD_PACK to the folder holding "
            f"games-<split>.jsonl.gz, or use alfworld_generator for games without data")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield GameRecord.from_json(json.loads(line))


@functools.lru_cache(maxsize=8)
def _load_pack_cached(split: str, pack_dir: str) -> tuple[GameRecord, ...]:
    return tuple(iter_pack(split, pack_dir))


def load_pack(split: str, pack_dir: str | Path | None = None) -> tuple[GameRecord, ...]:
    """All records of a split, sorted by id (cached per process)."""
    return _load_pack_cached(split, str(Path(pack_dir or default_pack_dir())))


def data_root() -> Path | None:
    """$ALFWORLD_DATA (the folder holding json_2.1.1/), or None if unset."""
    env = os.environ.get("ALFWORLD_DATA")
    return Path(os.path.expandvars(env)) if env else None


def task_from_grammar(grammar: str) -> str:
    """The task sentence substituted for UNKNOWN GOAL in a game's grammar."""
    match = _TASK_LINE.search(grammar)
    if not match:
        raise ValueError("grammar has no 'Your task is to: ...' line")
    return match.group(1)


def iter_data_dir(split: str, root: str | Path | None = None) -> Iterator[GameRecord]:
    """Records from the standard layout, with ALFWorld's collection filters:
    traj_data.json present, no 'movable'/'Sliced' in the path, one of the six
    task types, game.tw-pddl present with "solvable": true. Sorted by id."""
    _check_split(split)
    root = Path(root) if root is not None else data_root()
    if root is None:
        raise FileNotFoundError("$ALFWORLD_DATA is not set")
    split_dir = root / "json_2.1.1" / split
    if not split_dir.is_dir():
        raise FileNotFoundError(f"{split_dir} does not exist")
    for traj_path in sorted(split_dir.rglob("traj_data.json")):
        folder = traj_path.parent
        game_path = folder / "game.tw-pddl"
        if "movable" in str(folder) or "Sliced" in str(folder) or not game_path.is_file():
            continue
        traj = json.loads(traj_path.read_text())
        if traj.get("task_type") not in TASK_TYPES:
            continue
        game = json.loads(game_path.read_text())
        if not game.get("solvable", False):
            continue
        yield GameRecord(
            id=str(folder.relative_to(root)),
            split=split,
            task_type=traj["task_type"],
            task=task_from_grammar(game["grammar"]),
            pddl_params=tuple(sorted(traj.get("pddl_params", {}).items())),
            pddl_problem=game["pddl_problem"],
        )


def load_games(split: str, source: str = "auto",
               pack_dir: str | Path | None = None) -> tuple[GameRecord, ...]:
    """Games of a split. source: 'pack', 'data_dir' ($ALFWORLD_DATA) or 'auto'
    (the pack if present, else $ALFWORLD_DATA)."""
    if source not in ("auto", "pack", "data_dir"):
        raise ValueError(f"source must be 'auto', 'pack' or 'data_dir', got {source!r}")
    if source == "pack" or (source == "auto" and pack_available(split, pack_dir)):
        return load_pack(split, pack_dir)
    if source == "data_dir" or data_root() is not None:
        return tuple(iter_data_dir(split))
    raise FileNotFoundError(
        f"no ALFWorld games for split {split!r}: neither the pack at {pack_path(split, pack_dir)} "
        f"nor $ALFWORLD_DATA exists (alfworld_generator makes games without data)")


def alfworld_logic_files() -> tuple[str, str]:
    """(domain text, grammar text) shipped with alfworld 0.4.2."""
    try:
        import alfworld.info
    except ImportError as e:
        raise ImportError(
            "the real ALFWorld engine needs `pip install alfworld==0.4.2 textworld==1.7.0`") from e
    with open(alfworld.info.ALFRED_PDDL_PATH) as f:
        domain = f.read()
    with open(alfworld.info.ALFRED_TWL2_PATH) as f:
        grammar = f.read()
    return domain, grammar


def game_json(record: GameRecord) -> dict:
    """The game.tw-pddl content for a record (packaged 0.4.2 domain + grammar)."""
    domain, grammar = alfworld_logic_files()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", record.task),
        "pddl_problem": record.pddl_problem,
        "solvable": True,
    }


def materialise(record: GameRecord, root: str | Path) -> Path:
    """Write <root>/<record.id>/{game.tw-pddl, traj_data.json}; return the game file."""
    folder = Path(root) / record.id
    folder.mkdir(parents=True, exist_ok=True)
    game_path = folder / "game.tw-pddl"
    game_path.write_text(json.dumps(game_json(record)))
    (folder / "traj_data.json").write_text(
        json.dumps({"task_type": record.task_type, "pddl_params": record.params}))
    return game_path


def write_pack(records, split: str, pack_dir: str | Path) -> Path:
    """Writes records as ``<pack_dir>/games-<split>.jsonl.gz`` (the pack
    format `iter_pack` reads), sorted by id, through a temporary file."""
    path = pack_path(split, pack_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for record in sorted(records, key=lambda r: r.id):
            f.write(json.dumps(record.to_json(), sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m crl_jax.envs.alfworld_data --out DIR``: the pack of every
    split from ALFWorld's own download ($ALFWORLD_DATA, as alfworld-download
    leaves it); point $CRL_ALFWORLD_PACK at DIR to use it."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", required=True, help="folder for games-<split>.jsonl.gz")
    parser.add_argument("--data", default=None, help="ALFWorld data root (default $ALFWORLD_DATA)")
    args = parser.parse_args(argv)
    root = args.data or data_root()
    if root is None:
        parser.error("set $ALFWORLD_DATA (or --data) to the folder holding json_2.1.1/")
    for split in SPLITS:
        records = list(iter_data_dir(split, root))
        path = write_pack(records, split, args.out)
        print(f"{split}: {len(records)} games -> {path} (expected {SPLIT_SIZES[split]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
