"""How predictable object placement is across the games of one ALFWorld floorplan.

A lesson ("in this household apples are usually on the countertop") can only
help a new game if where a type lies in one game says something about where
it lies in the next game of the same scene. ``home_hit_rates`` measures that
on any set of games, leave one game out at a time: for each game and each
object type it asks, the receptacle where that type lay most often in the
*other* games of the same floorplan (its "home") is checked against where it
lies in this game. Chance is a uniform guess among the game's receptacles
that can hold the type. Both levels are measured: the receptacle instance
("countertop 2", the name the game shows) and the receptacle type
("countertop").

docs/FINDINGS.md, "Household regularity", gives it on the real train pack
and on the households (alfworld_households.py) calibrated with it.
"""
from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Sequence

from crl_jax.envs.alfworld_data import GameRecord
from crl_jax.envs.alfworld_households import household_index
from crl_jax.envs.alfworld_pddl import parse_problem

LEVELS = ("instance", "type")
EVIDENCE = ("target", "any")


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where the objects of one type lie in one game (receptacle display names)."""

    floorplan: str
    game: str
    otype: str                    # "apple"
    target: bool                  # the type is the game's object_target
    holders: frozenset            # receptacles holding an object of the type
    candidates: frozenset         # receptacles of the game that can hold the type


def receptacle_kind(name: str) -> str:
    """"countertop 2" -> "countertop"."""
    return name.rsplit(" ", 1)[0]


def floorplan_of(record: GameRecord) -> str:
    """The scene number ALFRED's task folder ends with ("...-DeskLamp-323" -> "323");
    a generated game's household ("generated/.../household_7/seed_3" -> "household_7")."""
    if "/household_" in record.id:
        return f"household_{household_index(record.id)}"
    parts = record.id.split("/")
    folder = parts[-2] if len(parts) >= 2 else record.id
    return folder.rsplit("-", 1)[-1]


def placements(record: GameRecord) -> list[Placement]:
    """One Placement per object type that lies in some receptacle of the game."""
    spec = parse_problem(record.pddl_problem)
    target = str(record.params.get("object_target", "")).lower()
    holders = collections.defaultdict(set)
    for obj, rec in spec.init_inrec:
        if obj in spec.otype and rec in spec.receptacles:
            holders[spec.otype[obj].removesuffix("type")].add(spec.names[rec])
    out = []
    for otype, held in sorted(holders.items()):
        rtypes_ok = {r for r, o in spec.can_contain if o == f"{otype}type"}
        cands = {spec.names[r] for r in spec.receptacles if spec.rtype.get(r) in rtypes_ok}
        out.append(Placement(floorplan_of(record), record.id, otype, otype == target,
                             frozenset(held), frozenset(cands | held)))
    return out


@dataclasses.dataclass(frozen=True)
class HitRates:
    """Leave-one-out home prediction over ``n`` (game, type) pairs."""

    n: int
    top1: float       # the most frequent home holds the type in this game
    top2: float       # one of the two most frequent homes does
    chance: float     # a uniform guess among the candidates does
    floorplans: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def home_hit_rates(items: Iterable[Placement], level: str = "instance",
                   evidence: str = "target", targets_only: bool = True) -> HitRates:
    """Leave-one-out hit rates of the floorplan's most frequent home.

    ``level``: "instance" compares receptacle names, "type" their kinds.
    ``evidence``: which other games of the floorplan vote: "target" those
    whose goal object is the same type, "any" every game where the type lies
    somewhere. ``targets_only``: score only the goal object of each game.
    A pair with no other game to vote is skipped. Tied homes share the hit
    (a tie of two counts a hit as 1/2), so ties are not broken in anyone's
    favour."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if evidence not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {evidence!r}")
    key = (lambda names: frozenset(names)) if level == "instance" else \
        (lambda names: frozenset(receptacle_kind(n) for n in names))
    groups = collections.defaultdict(list)
    for p in items:
        groups[(p.floorplan, p.otype)].append(p)
    n, top1, top2, chance, plans = 0, 0.0, 0.0, 0.0, set()
    for (plan, _), group in groups.items():
        votes = collections.Counter()
        for p in group:
            if evidence == "any" or p.target:
                votes.update(key(p.holders))
        for p in group:
            if targets_only and not p.target:
                continue
            own = collections.Counter(key(p.holders)) if evidence == "any" or p.target else {}
            others = votes - collections.Counter(own)
            if not others:
                continue
            holders = key(p.holders)
            top1 += _tie_hit(others, holders, 1)
            top2 += _tie_hit(others, holders, 2)
            cands = key(p.candidates)
            chance += len(holders & cands) / len(cands)
            n += 1
            plans.add(plan)
    if n == 0:
        return HitRates(0, float("nan"), float("nan"), float("nan"), 0)
    return HitRates(n, top1 / n, top2 / n, chance / n, len(plans))


def _tie_hit(votes: collections.Counter, holders: frozenset, k: int) -> float:
    """Expected hit of guessing the k most voted homes, ties drawn uniformly."""
    ranked = sorted(votes.values(), reverse=True)
    cut = ranked[min(k, len(ranked)) - 1]
    sure = [h for h, c in votes.items() if c > cut]
    tied = [h for h, c in votes.items() if c == cut]
    slots = min(k, len(ranked)) - len(sure)
    if any(h in holders for h in sure):
        return 1.0
    hits = sum(h in holders for h in tied)
    if hits == 0:
        return 0.0
    # P(at least one hit among `slots` draws without replacement from `tied`)
    miss, pool, bad = 1.0, len(tied), len(tied) - hits
    for i in range(slots):
        miss *= max(bad - i, 0) / (pool - i)
    return 1.0 - miss


def pack_placements(records: Sequence[GameRecord]) -> list[Placement]:
    return [p for r in records for p in placements(r)]
