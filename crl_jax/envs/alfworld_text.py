"""ALFWorld feedback text, as alfworld 0.4.2's grammar (alfred.twl2) renders it.

Every function takes the game's GameSpec and the current fact index
({predicate: set of id tuples}, lower-case, as in alfworld_pddl) and returns
exactly the string the real engine prints. Lists follow TextWorld's
grammar: items in sorted order of the (mangled) ids of the facts that
produce them, joined by ", " with ", and " before the last item (even for
two items), and "nothing" when empty.

Also here: the agent-side action normaliser (an option of the environment
wrappers, never part of an engine that claims equality with the original).
"""
from __future__ import annotations

import re

from crl_jax.envs.alfworld_pddl import GameSpec

NOTHING_HAPPENS = "Nothing happens."
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"

# The `help` command's answer in alfworld 0.4.2 (the grammar's leading
# newline is dropped by TextWorld's grammar parser; the trailing one stays).
HELP_TEXT = (
    "Available commands:\n"
    "  look:                             look around your current location\n"
    "  inventory:                        check your current inventory\n"
    "  go to (receptacle):               move to a receptacle\n"
    "  open (receptacle):                open a receptacle\n"
    "  close (receptacle):               close a receptacle\n"
    "  take (object) from (receptacle):  take an object from a receptacle\n"
    "  move (object) to (receptacle):  place an object in or on a receptacle\n"
    "  examine (something):              examine a receptacle or an object\n"
    "  use (object):                     use an object\n"
    "  heat (object) with (receptacle):  heat an object using a receptacle\n"
    "  clean (object) with (receptacle): clean an object using a receptacle\n"
    "  cool (object) with (receptacle):  cool an object using a receptacle\n"
    "  slice (object) with (object):     slice an object using a sharp object\n"
)


def join_list(items: list[str]) -> str:
    """TextWorld's list rendering: 'nothing' / 'a' / 'a, b, and c'."""
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


# What a look shows: "On the countertop 1, you see a mug 1, and a apple 2." or
# "... In it, you see ..." (a room's "Looking quickly around you" and a
# look's "Next to it" list receptacles, not objects).
_LISTED = re.compile(r"(?:In it|On the [a-z]+ \d+), you see ([^.]*)")
_ARTICLE_NAME = re.compile(r"\ban? ([a-z]+ \d+)\b")


def objects_listed(observation: str) -> list[str]:
    """The objects an observation shows in a receptacle ("mug 1", ...), in
    the order listed; of a clipped observation, those named whole."""
    return [n for listed in _LISTED.findall(observation) for n in _ARTICLE_NAME.findall(listed)]


# Where a look stood: "You arrive at drawer 2. ..." or "You open the drawer 2. ...".
_PLACE = re.compile(r"You (?:arrive at|open the) ([a-z]+(?: [a-z]+)* \d+)\.")


def place_of_look(observation: str) -> str | None:
    """The receptacle an arrival or an opening names ("drawer 2"), or None
    for any other observation."""
    m = _PLACE.match(observation.strip())
    return m.group(1) if m else None


def _a(spec: GameSpec, ident: str) -> str:
    return "a " + spec.names[ident]


def agent_location(facts: dict) -> str:
    return next(iter(facts["atlocation"]))[1]


def receptacles_at(spec: GameSpec, loc: str) -> list[str]:
    return sorted(r for r, locs in spec.recep_locs.items() if loc in locs)


def contents(facts: dict, receptacle: str) -> list[str]:
    return sorted(o for o, r in facts["inreceptacle"] if r == receptacle)


def examine_receptacle(spec: GameSpec, facts: dict, r: str) -> str:
    name = spec.names[r]
    if r in spec.openable:
        if (r,) in facts["opened"]:
            items = join_list([_a(spec, o) for o in contents(facts, r)])
            return f"The {name} is open. In it, you see {items}."
        return f"The {name} is closed."
    items = join_list([_a(spec, o) for o in contents(facts, r)])
    return f"On the {name}, you see {items}."


def look(spec: GameSpec, facts: dict, intro: bool = False) -> str:
    """The `look` answer. In the intro the grammar's location variable is
    unbound, so "middle of a room" lists every receptacle; after the `look`
    command it is bound to the agent's location, which has none: "nothing"."""
    loc = agent_location(facts)
    here = receptacles_at(spec, loc)
    if not here:
        everything = sorted(spec.recep_locs) if intro else []
        listed = join_list([_a(spec, r) for r in everything])
        return f"You are in the middle of a room. Looking quickly around you, you see {listed}."
    facing = join_list([spec.names[r] for r in here])
    not_in = facts["not_inreceptacle"]
    # One item per (object at this location, receptacle here it has left).
    floor = [_a(spec, o)
             for o in sorted(o for o, l in facts["objectatlocation"] if l == loc)
             for r in here if (o, r) in not_in]
    return f"You are facing the {facing}. Next to it, you see {join_list(floor)}."


def intro(spec: GameSpec, facts: dict, task: str) -> str:
    return f"{WELCOME}\n\n{look(spec, facts, intro=True)}\n\nYour task is to: {task}."


def inventory(spec: GameSpec, facts: dict) -> str:
    held = sorted(o for _, o in facts["holds"])
    if not facts["holdsany"]:
        return "You are not carrying anything."
    return f"You are carrying: {join_list([_a(spec, o) for o in held])}."


def examine_object(spec: GameSpec, facts: dict, o: str) -> str:
    name = spec.names[o]
    if o in spec.properties["isreceptacleobject"]:
        inner = sorted(i for i, outer in spec.inrec_object if outer == o)
        return f"This is a normal {name}. In it, you see {join_list([_a(spec, i) for i in inner])}."
    clean, hot, cool, sliced = ((o,) in facts[p] for p in ("isclean", "ishot", "iscool", "issliced"))
    if sliced:
        if clean and hot:
            return f"This is a hot and clean sliced {name}."
        if clean and cool:
            return f"This is a cool and clean sliced {name}."
        if clean:
            return f"This is a clean sliced {name}."
        if hot:
            return f"This is a hot sliced {name}."
        if cool:
            return f"This is a cool sliced {name}."
    if clean and hot:
        return f"This is a hot and clean {name}."
    if clean and cool:
        return f"This is a cool and clean {name}."
    if hot:
        return f"This is a hot {name}."
    if clean:
        return f"This is a clean {name}."
    if cool:
        return f"This is a cold {name}."
    if o in spec.properties["toggleable"] and (o,) in facts["istoggled"]:
        return f"This {name} is on."
    # "toggleable & not_istoggled" never holds: nothing ever un-toggles.
    if o in spec.properties["sliceable"] and sliced:
        return f"This is a sliced {name}."
    return f"There's nothing special about {name}."


_PUT = re.compile(r"^put (.+?) (?:in|on|into|onto|in/on) (.+)$")


def normalize_action(text: object, admissible: tuple[str, ...] = ()) -> str:
    """Agent-side leniency (opt-in): strip, lower-case, collapse spaces, map
    the pre-0.4 `put X in/on Y` to `move X to Y`. Returns the text to send;
    the engine still answers "Nothing happens." if it is not admissible."""
    if not isinstance(text, str):
        return ""
    cmd = " ".join(text.strip().lower().split())
    if cmd in admissible:
        return cmd
    m = _PUT.match(cmd)
    if m:
        moved = f"move {m.group(1)} to {m.group(2)}"
        if not admissible or moved in admissible:
            return moved
    return cmd
