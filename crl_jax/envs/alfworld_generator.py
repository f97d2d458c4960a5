"""Procedural ALFWorld games in the original grammar, so the project runs
with no downloaded data.

``generate_game(seed)`` builds a room (kitchen, bedroom or bathroom) from
the receptacle and object vocabulary of the ALFRED scenes, places objects
in receptacles that can hold them, picks one of the six task types with a
target that is reachable, and writes a PDDL problem in the same form as the
ALFWorld games (mangled ALFRED ids such as
``Apple_bar__plus_01_dot_20_bar__plus_00_dot_91_bar__minus_02_dot_31``,
the same predicates, the same six goal formulas, the same task sentences).
The result is a GameRecord with split "generated"; both engines play it.
The same seed always gives the same game.
"""
from __future__ import annotations

import random

from crl_jax.envs.alfworld_data import TASK_TYPES, GameRecord

# Object properties: p pickupable, c cleanable, h heatable, k coolable,
# s sliceable, r isReceptacleObject, t toggleable.
OBJECTS = {
    "Apple": "pchks", "Bread": "phks", "Egg": "pchks", "Lettuce": "pcks", "Potato": "pchks",
    "Tomato": "pchks", "Mug": "pchkr", "Cup": "pchkr", "Plate": "pchkr", "Bowl": "pckr",
    "Pan": "pckr", "Pot": "pckr", "Fork": "pc", "Spoon": "pc", "Knife": "pc", "ButterKnife": "pc",
    "Spatula": "pc", "Ladle": "pc", "Kettle": "pc", "DishSponge": "pc", "Cloth": "pc",
    "SoapBar": "pc", "SaltShaker": "p", "PepperShaker": "p", "SoapBottle": "p", "WineBottle": "pk",
    "SprayBottle": "p", "ToiletPaper": "p", "Candle": "p", "HandTowel": "p", "Towel": "p",
    "TissueBox": "p", "Plunger": "p", "ScrubBrush": "p", "AlarmClock": "p", "Book": "p", "CD": "p",
    "CellPhone": "p", "CreditCard": "p", "KeyChain": "p", "Laptop": "p", "Pen": "p", "Pencil": "p",
    "Pillow": "p", "RemoteControl": "p", "Statue": "p", "Vase": "p", "Watch": "p",
    "Newspaper": "p", "Box": "pr", "BaseballBat": "p", "BasketBall": "p", "TennisRacket": "p",
    "DeskLamp": "t", "Window": "", "LightSwitch": "", "Chair": "", "Painting": "", "Mirror": "",
}
# What each receptacle type can hold (ALFRED's canContain, trimmed to OBJECTS).
_KITCHENWARE = "Apple Bread Egg Lettuce Potato Tomato Mug Cup Plate Bowl Pan Pot Fork Spoon Knife " \
               "ButterKnife Spatula Ladle Kettle DishSponge SaltShaker PepperShaker SoapBottle WineBottle"
_DESKWARE = "AlarmClock Book CD CellPhone CreditCard KeyChain Laptop Pen Pencil RemoteControl " \
            "Statue Vase Watch Newspaper Box Mug Bowl TissueBox"
CAN_CONTAIN = {
    "CounterTop": _KITCHENWARE + " CellPhone CreditCard Cloth SoapBar Candle",
    "DiningTable": _KITCHENWARE + " CellPhone CreditCard Book",
    "Cabinet": "Mug Cup Plate Bowl Pan Pot Kettle Ladle DishSponge SaltShaker PepperShaker "
               "SoapBottle WineBottle SoapBar SprayBottle ToiletPaper Candle Cloth TissueBox "
               "HandTowel Plunger Book Box Vase",
    "Drawer": "Fork Spoon Knife ButterKnife Spatula Ladle DishSponge SaltShaker PepperShaker "
              "SoapBar SoapBottle SprayBottle ToiletPaper Candle Cloth HandTowel TissueBox Book CD "
              "CellPhone CreditCard KeyChain Pen Pencil RemoteControl Watch Newspaper",
    "Shelf": "Mug Cup Plate Bowl Pot Kettle SaltShaker PepperShaker SoapBottle WineBottle SoapBar "
             "SprayBottle ToiletPaper Candle Cloth DishSponge TissueBox HandTowel " + _DESKWARE,
    "Fridge": "Apple Bread Egg Lettuce Potato Tomato Mug Cup Plate Bowl Pan Pot WineBottle",
    "Microwave": "Apple Bread Egg Potato Tomato Mug Cup Plate Bowl",
    "SinkBasin": "Apple Egg Lettuce Potato Tomato Mug Cup Plate Bowl Pan Pot Fork Spoon Knife "
                 "ButterKnife Spatula Ladle Kettle DishSponge Cloth SoapBar HandTowel",
    "StoveBurner": "Kettle Pan Pot", "CoffeeMachine": "Mug", "Toaster": "",
    "GarbageCan": "Apple Bread Egg Lettuce Potato Tomato DishSponge Cloth SoapBar SoapBottle "
                  "SprayBottle ToiletPaper TissueBox CD Pen Pencil Newspaper WineBottle HandTowel",
    "Bed": "BaseballBat BasketBall Book CellPhone Laptop Pillow TennisRacket",
    "Desk": _DESKWARE + " BasketBall TennisRacket Cloth",
    "SideTable": _DESKWARE + " BaseballBat BasketBall TennisRacket Candle Cloth",
    "Dresser": _DESKWARE + " BasketBall TennisRacket Candle Cloth SprayBottle ToiletPaper",
    "Safe": "CD CellPhone CreditCard KeyChain Statue Vase Watch",
    "Sofa": "Book Box CellPhone CreditCard KeyChain Laptop Newspaper Pillow RemoteControl",
    "ArmChair": "Book Box CellPhone CreditCard KeyChain Laptop Newspaper Pillow RemoteControl",
    "Toilet": "Candle Cloth DishSponge HandTowel SoapBar SoapBottle SprayBottle TissueBox ToiletPaper",
    "BathtubBasin": "Cloth DishSponge HandTowel SoapBar", "TowelHolder": "Towel",
    "HandTowelHolder": "HandTowel", "ToiletPaperHanger": "ToiletPaper",
}
# Scenes: receptacle type -> (min, max count, chance of a door); object types.
SCENES = {
    "kitchen": ({"Cabinet": (3, 8, .8), "Drawer": (2, 5, .7), "CounterTop": (1, 3, 0),
                 "StoveBurner": (2, 4, 0), "Fridge": (1, 1, 1), "Microwave": (1, 1, 1),
                 "SinkBasin": (1, 1, 0), "GarbageCan": (1, 1, 0), "CoffeeMachine": (1, 1, 0),
                 "Toaster": (1, 1, 0), "DiningTable": (0, 1, 0), "Shelf": (0, 2, 0)},
                _KITCHENWARE + " CellPhone CreditCard Window LightSwitch Chair"),
    "bedroom": ({"Bed": (1, 1, 0), "Desk": (0, 2, 0), "Drawer": (2, 6, .7), "Shelf": (1, 5, 0),
                 "SideTable": (1, 2, 0), "Dresser": (0, 1, 0), "GarbageCan": (1, 1, 0),
                 "Safe": (0, 1, 1), "Sofa": (0, 1, 0), "ArmChair": (0, 1, 0)},
                _DESKWARE + " Pillow BaseballBat BasketBall TennisRacket DeskLamp Window "
                "LightSwitch Chair Painting"),
    "bathroom": ({"Toilet": (1, 1, 0), "SinkBasin": (1, 2, 0), "BathtubBasin": (0, 1, 0),
                  "Cabinet": (1, 4, 1), "CounterTop": (1, 1, 0), "Drawer": (0, 4, .8),
                  "GarbageCan": (1, 1, 0), "HandTowelHolder": (0, 1, 0), "TowelHolder": (0, 1, 0),
                  "ToiletPaperHanger": (1, 1, 0), "Shelf": (0, 2, 0)},
                 "SoapBar SoapBottle SprayBottle ToiletPaper Candle HandTowel Towel Cloth "
                 "DishSponge TissueBox Plunger ScrubBrush Mirror LightSwitch Window"),
}
# Small rooms (a curriculum for tiny models): one or two of each receptacle
# kind, the optional ones sometimes, and about half the loose objects, so a
# search finds the target in a few visits and the room fits in one line.
SMALL_SCENES = {
    "kitchen": ({"Cabinet": (1, 2, .8), "Drawer": (1, 1, .7), "CounterTop": (1, 1, 0),
                 "StoveBurner": (1, 1, 0), "Fridge": (1, 1, 1), "Microwave": (1, 1, 1),
                 "SinkBasin": (1, 1, 0), "GarbageCan": (0, 1, 0), "CoffeeMachine": (0, 1, 0),
                 "DiningTable": (0, 1, 0)}, SCENES["kitchen"][1]),
    "bedroom": ({"Bed": (1, 1, 0), "Desk": (0, 1, 0), "Drawer": (1, 2, .7), "Shelf": (1, 1, 0),
                 "SideTable": (1, 1, 0), "GarbageCan": (0, 1, 0)}, SCENES["bedroom"][1]),
    "bathroom": ({"Toilet": (1, 1, 0), "SinkBasin": (1, 1, 0), "Cabinet": (1, 2, 1),
                  "CounterTop": (1, 1, 0), "GarbageCan": (0, 1, 0), "ToiletPaperHanger": (1, 1, 0)},
                 SCENES["bathroom"][1]),
}
# Medium rooms (the households' default): small rooms' kinds with wider
# counts, so rooms differ in what their first observation lists (a household
# is recognised by it) and a search takes long enough that knowing where
# things usually lie pays under a tight turn cap.
MEDIUM_SCENES = {
    "kitchen": ({"Cabinet": (1, 3, .8), "Drawer": (1, 2, .7), "CounterTop": (1, 2, 0),
                 "StoveBurner": (1, 2, 0), "Fridge": (1, 1, 1), "Microwave": (1, 1, 1),
                 "SinkBasin": (1, 1, 0), "GarbageCan": (0, 1, 0), "CoffeeMachine": (0, 1, 0),
                 "DiningTable": (0, 1, 0), "Shelf": (0, 1, 0)}, SCENES["kitchen"][1]),
    "bedroom": ({"Bed": (1, 1, 0), "Desk": (0, 1, 0), "Drawer": (1, 3, .7), "Shelf": (1, 2, 0),
                 "SideTable": (1, 2, 0), "Dresser": (0, 1, 0), "GarbageCan": (0, 1, 0),
                 "Safe": (0, 1, 1)}, SCENES["bedroom"][1]),
    "bathroom": ({"Toilet": (1, 1, 0), "SinkBasin": (1, 2, 0), "Cabinet": (1, 3, 1),
                  "CounterTop": (1, 1, 0), "Drawer": (0, 2, .8), "GarbageCan": (0, 1, 0),
                  "TowelHolder": (0, 1, 0), "ToiletPaperHanger": (1, 1, 0),
                  "HandTowelHolder": (0, 1, 0)}, SCENES["bathroom"][1]),
}
ROOM_SIZES = ("full", "small", "medium")
SCENE_TABLES = {"full": SCENES, "small": SMALL_SCENES, "medium": MEDIUM_SCENES}
OBJECT_DRAWS = {"full": (0, 2), "small": (0, 1), "medium": (0, 1)}  # loose objects of a type
SENTENCES = {
    "pick_and_place_simple": ("put a {o} in {r}", "put some {o} on {r}"),
    "look_at_obj_in_light": ("examine the {o} with the {t}", "look at {o} under the {t}"),
    "pick_clean_then_place_in_recep": ("clean some {o} and put it in {r}", "put a clean {o} in {r}"),
    "pick_heat_then_place_in_recep": ("heat some {o} and put it in {r}", "put a hot {o} in {r}"),
    "pick_cool_then_place_in_recep": ("cool some {o} and put it in {r}", "put a cool {o} in {r}"),
    "pick_two_obj_and_place": ("find two {o} and put them in {r}", "put two {o} in {r}"),
}
_NEEDS = {  # task type -> (object property, receptacle type the scene must have)
    "pick_clean_then_place_in_recep": ("c", "SinkBasin"),
    "pick_heat_then_place_in_recep": ("h", "Microwave"),
    "pick_cool_then_place_in_recep": ("k", "Fridge"),
}
_MODIFIER = {"c": ("cleanable", "isClean"), "h": ("heatable", "isHot"), "k": ("coolable", "isCool")}
_PROPERTY_NAMES = {"p": "pickupable", "c": "cleanable", "h": "heatable", "k": "coolable",
                   "s": "sliceable", "r": "isReceptacleObject", "t": "toggleable"}
_LAMP_HOLDERS = ("Desk", "SideTable", "Dresser")


def _num(v: float) -> str:
    return ("_plus_" if v >= 0 else "_minus_") + f"{abs(v):05.2f}".replace(".", "_dot_")


class _Room:
    def __init__(self, rng: random.Random, scene: str):
        self.rng = rng
        self.scene = scene
        self.used: set[str] = set()
        self.receptacles: list[tuple[str, str]] = []   # (id, type)
        self.recep_loc: dict[str, str] = {}
        self.openable: set[str] = set()
        self.objects: list[tuple[str, str]] = []       # (id, type)
        self.inside: list[tuple[str, str]] = []        # (object id, receptacle id)
        self.obj_loc: dict[str, str] = {}
        # (object type, receptacle ids that can hold it) -> the one it goes in;
        # None: uniform (households replace it with their homes).
        self.choose = None
        # Object types a goal may name (households' goal menus); None: any.
        self.goal_types: frozenset | None = None
        # Object type -> the receptacle types it usually lies in (households):
        # no goal puts it there, so a lesson's first home is where to look
        # first, never the receptacle the goal empties of it.
        self.home_kinds: dict[str, frozenset] = {}

    def new_id(self, kind: str, suffix: str = "") -> str:
        while True:
            x, y, z = (round(self.rng.uniform(-3, 3), 2) for _ in range(3))
            ident = f"{kind}_bar_{_num(x)}_bar_{_num(abs(y))}_bar_{_num(z)}{suffix}"
            if ident not in self.used:
                self.used.add(ident)
                return ident

    def new_loc(self) -> str:
        while True:
            parts = [self.rng.randint(-9, 9), self.rng.randint(-9, 9), self.rng.randint(0, 3),
                     self.rng.choice((0, 15, 30, 45, 60))]
            ident = "loc" + "".join("_bar_" + (f"_minus_{-p}" if p < 0 else str(p)) for p in parts)
            if ident not in self.used:
                self.used.add(ident)
                return ident

    def add_receptacle(self, rtype: str, door: float) -> None:
        basin = rtype.endswith("Basin")  # ALFRED: Sink|x|y|z|SinkBasin
        kind = rtype[:-5] if basin else rtype
        rid = self.new_id(kind, f"_bar_{rtype}" if basin else "")
        # Stacked drawers/cabinets sometimes share the spot the agent stands on.
        same = [r for r, t in self.receptacles if t == rtype]
        share = same and rtype in ("Drawer", "Cabinet") and self.rng.random() < 0.25
        self.recep_loc[rid] = self.recep_loc[same[-1]] if share else self.new_loc()
        self.receptacles.append((rid, rtype))
        if self.rng.random() < door:
            self.openable.add(rid)

    def place(self, otype: str, avoid: frozenset = frozenset()) -> bool:
        holders = [r for r, t in self.receptacles if otype in CAN_CONTAIN[t].split() and t not in avoid]
        if otype == "DeskLamp":
            holders = [r for r, t in self.receptacles if t in _LAMP_HOLDERS]
        if not holders and "p" in OBJECTS[otype] or (otype == "DeskLamp" and not holders):
            return False
        oid = self.new_id(otype)
        self.objects.append((oid, otype))
        if holders:
            rid = self.choose(otype, holders) if self.choose else self.rng.choice(holders)
            self.inside.append((oid, rid))
            self.obj_loc[oid] = self.recep_loc[rid]
        else:  # fixtures (windows, switches...) stand somewhere in the room
            self.obj_loc[oid] = self.new_loc()
        return True


def _choose_task(rng: random.Random, task_type: str, room: _Room):
    """(target object type, parent receptacle type or lamp type) or None."""
    kinds = {t for _, t in room.receptacles}
    present = sorted({t for _, t in room.objects})
    if room.goal_types is not None:  # the lamp is no goal, so it stays for its tasks
        present = [t for t in present if t in room.goal_types or t == "DeskLamp"]
    if task_type == "look_at_obj_in_light":
        if "DeskLamp" not in present:
            return None
        options = [o for o in present if "p" in OBJECTS[o]]
        return (rng.choice(options), "DeskLamp") if options else None
    prop = _NEEDS.get(task_type, ("p", None))[0]
    pairs = [(o, r) for o in present for r in sorted(kinds)
             if prop in OBJECTS[o] and "p" in OBJECTS[o] and o in CAN_CONTAIN[r].split()
             and r not in room.home_kinds.get(o, ())]
    return rng.choice(pairs) if pairs else None


def _goal(task_type: str, obj: str, parent: str) -> str:
    o, r = f"(objectType ?o {obj}Type)", f"(receptacleType ?r {parent}Type)"
    if task_type == "look_at_obj_in_light":
        lamp = (f"(exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and "
                f"(objectType ?ot {parent}Type) (toggleable ?ot) (isToggled ?ot) "
                f"(receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r)))")
        held = f"(exists (?o - object ?a - agent) (and {o} (holds ?a ?o)))"
        return f"(and {lamp} {held})"
    if task_type == "pick_two_obj_and_place":
        return (f"(and (exists (?r - receptacle) (exists (?o1 - object) (and (objectType ?o1 {obj}Type) "
                f"{r} (inReceptacle ?o1 ?r) (exists (?o2 - object) (and (not (= ?o1 ?o2)) "
                f"(objectType ?o2 {obj}Type) {r} (inReceptacle ?o2 ?r)))))))")
    extra = ""
    if task_type in _NEEDS:
        prop, fact = _MODIFIER[_NEEDS[task_type][0]]
        extra = f" ({prop} ?o) ({fact} ?o)"
    return f"(and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) {o} {r}{extra}))))"


def _problem(room: _Room, name: str, goal: str, agent_loc: str) -> str:
    rtypes = sorted({t for _, t in room.receptacles})
    otypes = sorted({t for _, t in room.objects})
    objects = ["agent1 - agent"]
    objects += [f"{t}Type - otype" for t in otypes] + [f"{t}Type - rtype" for t in rtypes]
    objects += [f"{i} - object" for i, _ in room.objects] + [f"{i} - receptacle" for i, _ in room.receptacles]
    objects += [f"{loc} - location" for loc in sorted(set(room.recep_loc.values()) |
                                                      set(room.obj_loc.values()) | {agent_loc})]
    init = [f"(receptacleType {i} {t}Type)" for i, t in room.receptacles]
    init += [f"(objectType {i} {t}Type)" for i, t in room.objects]
    init += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes if o in CAN_CONTAIN[r].split()]
    for i, t in room.objects:
        init += [f"({_PROPERTY_NAMES[f]} {i})" for f in OBJECTS[t]]
    init += [f"(openable {r})" for r, _ in room.receptacles if r in room.openable]
    init.append(f"(atLocation agent1 {agent_loc})")
    init += [f"(inReceptacle {o} {r})" for o, r in room.inside]
    init += [f"(receptacleAtLocation {r} {room.recep_loc[r]})" for r, _ in room.receptacles]
    init += [f"(objectAtLocation {o} {room.obj_loc[o]})" for o, _ in room.objects]
    sep = "\n        "
    return (f"(define (problem {name})\n(:domain alfred)\n(:objects\n        {sep.join(objects)}\n        )\n"
            f"(:init\n        {sep.join(init)}\n        )\n(:goal\n    {goal}\n    )\n)\n")


def generate_game(seed: int, task_type: str | None = None, room_size: str = "full") -> GameRecord:
    """A new solvable game; the same (seed, task_type, room_size) gives the same game.
    ``room_size="small"`` draws from SMALL_SCENES (a few receptacles, fewer
    objects), "medium" from MEDIUM_SCENES."""
    if task_type is not None and task_type not in TASK_TYPES:
        raise ValueError(f"unknown task_type {task_type!r}; valid: {TASK_TYPES}")
    if room_size not in ROOM_SIZES:
        raise ValueError(f"unknown room_size {room_size!r}; valid: {ROOM_SIZES}")
    scenes_table = SCENE_TABLES[room_size]
    for attempt in range(100):
        key = f"{seed}/{task_type}/{attempt}" + ("" if room_size == "full" else f"/{room_size}")
        rng = random.Random(key)
        ttype = task_type or rng.choice(TASK_TYPES)
        scene = rng.choice(scenes_for(ttype, scenes_table))
        recs, objs = scenes_table[scene]
        room = _Room(rng, scene)
        for rtype, (lo, hi, door) in recs.items():
            for _ in range(rng.randint(lo, hi)):
                room.add_receptacle(rtype, door)
        fill_objects(room, objs, OBJECT_DRAWS[room_size])
        game_id = (f"generated/{{ttype}}-{{obj}}-None-{{parent}}-{scene}/seed_{seed}"
                   + ("" if room_size == "full" else f"_{room_size}"))
        record = finish_game(rng, room, ttype, f"gen_{seed}_{attempt}", game_id)
        if record is not None:
            return record
    raise RuntimeError(f"could not generate a {task_type or 'any'} game for seed {seed}")


def scenes_for(task_type: str, scenes_table: dict) -> list[str]:
    """The scenes of ``scenes_table`` where ``task_type`` can be posed."""
    if task_type == "look_at_obj_in_light":
        return ["bedroom"]
    need = _NEEDS.get(task_type, (None, None))[1]
    return [s for s, (recs, _) in scenes_table.items() if need is None or need in recs]


def fill_objects(room: _Room, objects: str, draw: tuple[int, int]) -> None:
    """Loose objects of each type of ``objects``, ``draw`` of each (a range)."""
    for otype in sorted(set(objects.split())):
        for _ in range(room.rng.randint(*draw)):
            room.place(otype)


def finish_game(rng: random.Random, room: _Room, ttype: str, name: str,
                game_id: str) -> GameRecord | None:
    """The game of ``room`` with a ``ttype`` task drawn from what it holds (its
    target moved out of every parent receptacle); None when the room has no
    such task. ``game_id`` may name {ttype}, {obj}, {parent}."""
    choice = _choose_task(rng, ttype, room)
    if choice is None:
        return None
    obj, parent = choice
    if ttype == "look_at_obj_in_light":
        avoid = frozenset()
    else:  # targets start outside every parent receptacle, so the game is not won at once
        avoid = frozenset({parent})
        kind = dict(room.objects + room.receptacles)
        room.inside = [(o, r) for o, r in room.inside if not (kind[o] == obj and kind[r] == parent)]
        placed = {o for o, _ in room.inside}
        room.objects = [(o, t) for o, t in room.objects if t != obj or o in placed]
    needed = 2 if ttype == "pick_two_obj_and_place" else 1
    while sum(t == obj for _, t in room.objects) < needed:
        if not room.place(obj, avoid):
            break
    if sum(t == obj for _, t in room.objects) < needed:
        return None
    agent_loc = room.new_loc()
    words = {"o": obj.lower(), "r": parent.lower(), "t": parent.lower()}
    task = rng.choice(SENTENCES[ttype]).format(**words)
    params = {"object_target": obj, "parent_target": "" if ttype == "look_at_obj_in_light" else parent,
              "toggle_target": parent if ttype == "look_at_obj_in_light" else "",
              "mrecep_target": "", "object_sliced": False}
    return GameRecord(
        id=game_id.format(ttype=ttype, obj=obj, parent=parent),
        split="generated", task_type=ttype, task=task,
        pddl_params=tuple(sorted(params.items())),
        pddl_problem=_problem(room, name, _goal(ttype, obj, parent), agent_loc))


def generate_games(n: int, seed: int = 0, task_type: str | None = None,
                   room_size: str = "full") -> tuple[GameRecord, ...]:
    """n games with seeds seed, seed+1, ... (task types cycle when task_type is None)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return tuple(generate_game(seed + i, task_type or TASK_TYPES[(seed + i) % len(TASK_TYPES)],
                               room_size) for i in range(n))
