"""ALFWorld households: rooms whose objects have homes, so what one game
teaches carries to the next game of the same room.

A generated game (alfworld_generator.generate_game) builds a new room and
puts every object on a receptacle drawn uniformly: nothing learnt in one
game says anything about another. Real ALFWorld is not like that: its games
come from 108 floorplans, and where a type lay in the other games of a
floorplan predicts where it lies in this one (the receptacle where it lay
most often holds it in 58% of games against 21% for a uniform guess;
docs/FINDINGS.md, "Household regularity").

A household fixes the room: its receptacles (kinds, numbers, doors, where
they stand) and, for each object type, its homes: two receptacles that can
hold it, the first more likely (HOME_WEIGHTS). A game of the household draws
its goal and which objects are present afresh; each object lies at one of
its homes with probability ``home_rate`` and on a receptacle drawn uniformly
otherwise. ``home_rate=0`` is the uniform placement of generated games (the
control where no lesson can transfer). The household is recognised by its
first observation: the receptacles it lists (``signature``), distinct
within a household set (``households``).
"""
from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Iterable, Sequence

from crl_jax.envs.alfworld_data import TASK_TYPES, GameRecord
from crl_jax.envs.alfworld_generator import (_LAMP_HOLDERS, _NEEDS, CAN_CONTAIN, OBJECT_DRAWS,
                                             OBJECTS, ROOM_SIZES, SCENE_TABLES, _Room,
                                             fill_objects, finish_game, scenes_for)
from crl_jax.envs.alfworld_pddl import display_names

# P(first home), P(second home) given that an object lies at a home: with
# home_rate calibrated on the real pack, the generated households' leave-one-
# out hit rates of the top-1 and top-2 homes come out near the pack's
# (docs/FINDINGS.md, "Household regularity").
HOME_WEIGHTS = (0.75, 0.25)
# Bumped whenever the same household and seed give another game: warm starts
# cached under the previous generation then no longer match (warm_cache.py).
GENERATION = 2
DEFAULT_HOME_RATE = 0.5
GOAL_TYPES = 4   # object types a household's goals name
GOAL_COPIES = (1, 2)  # objects of each goal type a game holds (the pack: 2.2 of its target)


@dataclasses.dataclass(frozen=True)
class Household:
    """A room and where each object type usually lies in it."""

    index: int
    room_size: str
    scene: str                                       # kitchen, bedroom, bathroom
    receptacles: tuple[tuple[str, str], ...]         # (id, type) in the order they were built
    recep_loc: tuple[tuple[str, str], ...]           # (id, location)
    openable: frozenset
    homes: tuple[tuple[str, tuple[str, ...]], ...]   # (object type, receptacle ids, likeliest first)
    goal_types: tuple[str, ...]                      # the object types its goals name

    @property
    def names(self) -> dict:
        """Receptacle id -> the name the game shows ("cabinet 2")."""
        shown = display_names(i.lower() for i, _ in self.receptacles)
        return {i: shown[i.lower()] for i, _ in self.receptacles}

    @property
    def signature(self) -> tuple[str, ...]:
        """The receptacles the first observation lists, sorted: what tells
        this household from another to an agent."""
        return tuple(sorted(self.names.values()))

    def home_ids(self, otype: str) -> tuple[str, ...]:
        return dict(self.homes).get(otype, ())

    def home_names(self, otype: str) -> list[str]:
        """Where ``otype`` ("Apple", or "apple") usually lies, likeliest first."""
        homes = dict((t.lower(), ids) for t, ids in self.homes).get(otype.lower(), ())
        names = self.names
        return [names[r] for r in homes]

    def task_types(self) -> tuple[str, ...]:
        """The task types a game of this household can pose."""
        recs = {t for _, t in self.receptacles}
        table = {self.scene: (dict.fromkeys(recs), "")}
        props = "".join(OBJECTS[o] for o in self.goal_types)
        return tuple(t for t in TASK_TYPES if self.scene in scenes_for(t, table)
                     and _NEEDS.get(t, ("p",))[0] in props
                     and (t != "look_at_obj_in_light" or recs & set(_LAMP_HOLDERS)))


def make_household(index: int, room_size: str = "medium") -> Household:
    """Household ``index`` (the same index and size always give the same one)."""
    if room_size not in ROOM_SIZES:
        raise ValueError(f"unknown room_size {room_size!r}; valid: {ROOM_SIZES}")
    rng = random.Random(f"household/{index}/{room_size}")
    table = SCENE_TABLES[room_size]
    scene = rng.choice(sorted(table))
    recs, objs = table[scene]
    room = _Room(rng, scene)
    for rtype, (lo, hi, door) in recs.items():
        for _ in range(rng.randint(lo, hi)):
            room.add_receptacle(rtype, door)
    homes = []
    for otype in sorted(set(objs.split())):
        if otype == "DeskLamp":
            holders = [r for r, t in room.receptacles if t in _LAMP_HOLDERS]
        elif "p" in OBJECTS[otype]:
            holders = [r for r, t in room.receptacles if otype in CAN_CONTAIN[t].split()]
        else:
            continue  # fixtures stand somewhere in the room, on nothing
        if holders:
            homes.append((otype, tuple(rng.sample(holders, min(len(HOME_WEIGHTS), len(holders))))))
    # A goal names one of a few types, as a floorplan's tasks do in the real
    # pack (median 7 target types in 27 games; the commonest 3 take 64%).
    goal_options = [t for t, _ in homes if "p" in OBJECTS[t]]
    goal_types = tuple(sorted(rng.sample(goal_options, min(GOAL_TYPES, len(goal_options)))))
    return Household(index, room_size, scene, tuple(room.receptacles),
                     tuple(room.recep_loc.items()), frozenset(room.openable), tuple(homes),
                     goal_types)


def households(count: int, room_size: str = "medium", start: int = 0) -> tuple[Household, ...]:
    """``count`` households from index ``start`` on whose signatures are all
    different (an index whose room lists the same receptacles as an earlier
    one is skipped), so an agent can tell every one apart by its first look."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    out, seen, index = [], set(), start
    while len(out) < count:
        h = make_household(index, room_size)
        if h.signature not in seen:
            seen.add(h.signature)
            out.append(h)
        index += 1
        if index - start > 100 * count + 1000:
            raise ValueError(f"{room_size} rooms have fewer than {count} distinct receptacle lists")
    return tuple(out)


def household_game(household: Household, seed: int, home_rate: float = DEFAULT_HOME_RATE,
                   task_type: str | None = None, task_types: tuple[str, ...] = ()) -> GameRecord:
    """A new game of ``household``: the same arguments always give the same
    game. ``task_types`` (empty: all) narrows the types it may pose."""
    if not 0.0 <= home_rate <= 1.0:
        raise ValueError(f"home_rate must be in [0, 1], got {home_rate!r}")
    feasible = tuple(t for t in household.task_types() if not task_types or t in task_types)
    if not feasible:
        raise ValueError(f"household {household.index} ({household.scene}) can pose none of "
                         f"{task_types}; it poses {household.task_types()}")
    if task_type is not None and task_type not in feasible:
        raise ValueError(f"household {household.index} ({household.scene}) cannot pose "
                         f"{task_type!r}; it poses {feasible}")
    # The task type is drawn once, uniformly over what the room can pose:
    # redrawn with every attempt, the types a room often cannot set up
    # (a lamp to find, an object to heat) would give way to the easy ones.
    ttype = task_type or random.Random(f"household/{household.index}/{household.room_size}/"
                                       f"game/{seed}/type").choice(feasible)
    for attempt in range(100):
        rng = random.Random(f"household/{household.index}/{household.room_size}/game/{seed}/"
                            f"{task_type}/{home_rate}/{attempt}")
        room = _furnished(household, rng, home_rate)
        fill_objects(room, SCENE_TABLES[household.room_size][household.scene][1],
                     OBJECT_DRAWS[household.room_size])
        for otype in household.goal_types:
            copies = rng.randint(*GOAL_COPIES)
            while sum(t == otype for _, t in room.objects) < copies and room.place(otype):
                pass
        game_id = (f"generated/{{ttype}}-{{obj}}-None-{{parent}}-{household.scene}/"
                   f"household_{household.index}/seed_{seed}")
        record = finish_game(rng, room, ttype, f"hh_{household.index}_{seed}_{attempt}", game_id)
        if record is not None:
            return record
    raise RuntimeError(f"household {household.index} gave no {task_type or 'any'} game "
                       f"for seed {seed}")


def _furnished(household: Household, rng: random.Random, home_rate: float) -> _Room:
    """The household's room, empty, placing objects by its homes."""
    room = _Room(rng, household.scene)
    room.receptacles = list(household.receptacles)
    room.recep_loc = dict(household.recep_loc)
    room.openable = set(household.openable)
    room.used = {i for i, _ in household.receptacles} | set(room.recep_loc.values())
    homes = dict(household.homes)

    def choose(otype: str, holders: Sequence[str]) -> str:
        # One draw decides home or not whatever the rate, so the rate changes
        # only that decision, not the rest of the game's random stream.
        at_home = rng.random() < home_rate
        options = [r for r in homes.get(otype, ()) if r in holders]
        if at_home and options:
            weights = [HOME_WEIGHTS[homes[otype].index(r)] for r in options]
            return rng.choices(options, weights)[0]
        return rng.choice(list(holders))

    room.choose = choose
    room.goal_types = frozenset(household.goal_types)
    kind = dict(household.receptacles)
    room.home_kinds = {t: frozenset(kind[r] for r in ids) for t, ids in household.homes}
    return room


def household_games(members: Iterable[Household | int], n: int, seed: int = 0,
                    home_rate: float = DEFAULT_HOME_RATE, room_size: str = "medium",
                    task_types: tuple[str, ...] = ()) -> tuple[GameRecord, ...]:
    """``n`` games dealt round the households (game i from household i mod H,
    seed ``seed + i``); ints are household indices of ``room_size``;
    ``task_types`` (empty: all) the types they may pose."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    members = [m if isinstance(m, Household) else make_household(m, room_size) for m in members]
    if not members and n:
        raise ValueError("household_games needs at least one household")
    return tuple(household_game(members[i % len(members)], seed + i, home_rate,
                                task_types=task_types) for i in range(n))


# Seed offsets of the held-out games: new games of the pool's households and
# games of unseen households never share a seed with training games.
SEEN_EVAL_OFFSET, UNSEEN_EVAL_OFFSET = 1_000_000, 2_000_000
SPLITS = ("generated", "generated_eval", "generated_unseen")


@dataclasses.dataclass(frozen=True)
class HouseholdSplit:
    """A run's households: the first ``households`` (the RL pool's
    ``pool`` first, the warm start's after them) and ``unseen`` more that no
    training touches, from index ``seed * 1000``. The pool's and the unseen
    households' signatures are all different (an agent tells each from the
    others and a bank's lessons never match an unseen room); a warm-start
    household only differs from those (two warm-start households may look
    alike: small rooms have few receptacle lists).

    Splits: "generated" deals ``n`` training games round the households
    (game i from household i mod households), "generated_eval" new games of
    the pool's households, "generated_unseen" games of the unseen ones.

    ``drawn`` (0: all of the pool) narrows RL to the pool's first ``drawn``
    households: the pool's places in the deal go round them instead, so the
    RL pool keeps its number of games, each household gets more, and the
    warm start's games stay the same; "generated_eval" is then theirs.

    ``task_types`` (empty: all six) narrows every split's games to those
    types, each game's type drawn among those its room can pose."""

    households: int
    pool: int
    unseen: int = 0
    home_rate: float = DEFAULT_HOME_RATE
    room_size: str = "medium"
    seed: int = 0
    drawn: int = 0
    task_types: tuple[str, ...] = ()

    def __post_init__(self):
        if not 0 <= self.drawn <= self.pool:
            raise ValueError(f"drawn={self.drawn} must be in [0, pool={self.pool}]")
        unknown = [t for t in self.task_types if t not in TASK_TYPES]
        if unknown:
            raise ValueError(f"unknown task types {unknown}; valid: {', '.join(TASK_TYPES)}")

    def members(self) -> tuple[Household, ...]:
        """Pool, warm start's, unseen; built once per split (the split is frozen)."""
        return _split_members(self)

    def games(self, split: str, n: int) -> tuple[GameRecord, ...]:
        members = self.members()
        if split == "generated":
            if n < 0:
                raise ValueError(f"n must be >= 0, got {n}")
            return tuple(self.game(i) for i in range(n))
        if split == "generated_eval":
            return household_games(self.rl_members(), n, self.seed + SEEN_EVAL_OFFSET,
                                   self.home_rate, task_types=self.task_types)
        if split == "generated_unseen":
            if not self.unseen:
                raise ValueError("split generated_unseen needs unseen households (0 here)")
            return household_games(members[self.households:], n, self.seed + UNSEEN_EVAL_OFFSET,
                                   self.home_rate, task_types=self.task_types)
        raise ValueError(f"unknown household split {split!r}; valid: {SPLITS}")

    def game(self, train_index: int) -> GameRecord:
        """Training game ``train_index`` (split "generated"), made alone."""
        return household_game(self._dealt(train_index), self.seed + train_index, self.home_rate,
                              task_types=self.task_types)

    def rl_members(self) -> tuple[Household, ...]:
        """The households RL draws games of: the pool's first ``drawn`` (or all)."""
        return self.members()[:self.drawn or self.pool]

    def in_pool(self, train_index: int) -> bool:
        """Whether training game ``train_index`` is in the RL pool (kept off the warm start)."""
        return train_index % self.households < self.pool

    def _dealt(self, train_index: int) -> Household:
        """Training game ``train_index``'s household: its place in the deal
        round the households, a pool place going round ``rl_members``."""
        place, drawn = train_index % self.households, self.rl_members()
        return drawn[place % len(drawn)] if place < self.pool else self.members()[place]


@functools.lru_cache(maxsize=16)
def _split_members(split: HouseholdSplit) -> tuple[Household, ...]:
    told_apart = households(split.pool + split.unseen, split.room_size, start=split.seed * 1000)
    taken = {h.signature for h in told_apart}
    warm, index = [], max(h.index for h in told_apart) + 1 if told_apart else split.seed * 1000
    while len(warm) < split.households - split.pool:
        h = make_household(index, split.room_size)
        if h.signature not in taken:
            warm.append(h)
        index += 1
        if index > split.seed * 1000 + 100 * split.households + 10_000:
            raise ValueError(f"{split.room_size} rooms have no receptacle list left for "
                             "the warm start's households")
    return (*told_apart[:split.pool], *warm, *told_apart[split.pool:])


def household_index(game_id: str) -> int:
    """The household a game is of: "generated/.../household_7/seed_3" -> 7."""
    for part in game_id.split("/"):
        if part.startswith("household_"):
            return int(part[len("household_"):])
    raise ValueError(f"game {game_id!r} is of no household")
