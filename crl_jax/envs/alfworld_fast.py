"""A pure-Python ALFWorld engine that plays the same games as the real one.

The real engine (alfworld 0.4.2 on TextWorld's PDDL environment) grounds
the domain with Fast Downward on every reset and re-derives every text from
a grammar; this engine implements the domain's actions directly on a fact
index ({predicate: set of id tuples}) and renders text with alfworld_text.
It answers the same commands, with the same feedback, the same sorted
admissible list and the same win, which tests/envs/test_alfworld_equivalence
checks step by step against the real engine.

Facts about the original that this engine reproduces on purpose:
* a command must equal an admissible command after ``str.strip()``;
  anything else is "Nothing happens." and changes nothing;
* `go to R` is not offered for receptacles at the agent's own location;
* `examine O` is offered only for the held object (the domain's other
  branch declares a type "location," with a comma, so it never matches);
* deleting a fact leaves its negation behind (TextWorld adds not_* facts),
  which makes `look` list an object as "next to" a receptacle it was taken
  from and put back beside;
* `use O` always answers "You turn on the O." (isToggled is never undone).
"""
from __future__ import annotations

import collections

from crl_jax.envs import alfworld_text as text
from crl_jax.envs.alfworld_data import GameRecord
from crl_jax.envs.alfworld_pddl import OBJECT_PROPERTIES, OBJECT_STATES, GameSpec, parse_problem

_TRANSFORMS = (  # command verb, object property, receptacle type, fact set, fact cleared
    ("heat", "heatable", "microwavetype", "ishot", "iscool"),
    ("cool", "coolable", "fridgetype", "iscool", "ishot"),
    ("clean", "cleanable", "sinkbasintype", "isclean", None),
)
_KNIVES = ("knifetype", "butterknifetype")


class FastAlfredEngine:
    """The game mechanics; the TextEnv wrapper is alfworld_env.FastAlfWorldEnv."""

    def __init__(self, record: GameRecord, spec: GameSpec | None = None):
        self.record = record
        self.spec = spec or parse_problem(record.pddl_problem)
        self.agent = next(iter(a for a in self.spec.entity_ids if a.startswith("agent")), "agent1")
        self.facts: dict = {}
        self._actions: dict = {}

    # -- state ---------------------------------------------------------
    def _initial_facts(self) -> dict:
        s = self.spec
        facts = collections.defaultdict(set)
        facts["atlocation"] = {(self.agent, s.init_agent_loc)}
        facts["inreceptacle"] = set(s.init_inrec)
        facts["objectatlocation"] = set(s.init_objloc)
        facts["opened"] = {(r,) for r in s.init_opened}
        facts["holds"] = {(self.agent, o) for o in s.init_holds}
        facts["holdsany"] = {(self.agent,)} if s.init_holds else set()
        facts["not_inreceptacle"] = set()
        for p in OBJECT_STATES:
            facts[p] = {(o,) for o in s.init_states[p]}
        # Static facts the goal formula may mention.
        facts["objecttype"] = set(s.otype.items())
        facts["receptacletype"] = set(s.rtype.items())
        facts["receptacleatlocation"] = {(r, loc) for r, locs in s.recep_locs.items() for loc in locs}
        facts["openable"] = {(r,) for r in s.openable}
        facts["cancontain"] = set(s.can_contain)
        for p in OBJECT_PROPERTIES:
            facts[p] = {(o,) for o in s.properties[p]}
        return facts

    def reset(self) -> tuple[str, tuple[str, ...], bool]:
        self.facts = self._initial_facts()
        admissible = self._refresh_actions()
        return text.intro(self.spec, self.facts, self.record.task), admissible, self.won()

    def won(self) -> bool:
        return self.spec.goal.holds(self.facts)

    def step(self, command: object) -> tuple[str, tuple[str, ...], bool, bool]:
        """Returns (feedback, admissible, won, accepted)."""
        cmd = command.strip() if isinstance(command, str) else None
        action = self._actions.get(cmd) if cmd is not None else None
        if action is None:
            return text.NOTHING_HAPPENS, self._admissible, self.won(), False
        feedback = self._apply(*action)
        return feedback, self._refresh_actions(), self.won(), True

    # -- admissible commands -------------------------------------------
    def _refresh_actions(self) -> tuple[str, ...]:
        s, f, n = self.spec, self.facts, self.spec.names
        loc = text.agent_location(f)
        here = text.receptacles_at(s, loc)
        held = sorted(o for _, o in f["holds"])
        acts = {"look": ("look",), "inventory": ("inventory",), "help": ("help",)}
        for r, locs in s.recep_locs.items():
            if loc not in locs:  # Fast Downward drops the no-op go-to of the current location
                acts["go to " + n[r]] = ("goto", r, next(iter(locs)))
        reachable = []  # receptacles here whose contents can be reached
        for r in here:
            acts["examine " + n[r]] = ("examine_r", r)
            if r in s.openable:
                if (r,) in f["opened"]:
                    acts["close " + n[r]] = ("close", r)
                    reachable.append(r)
                else:
                    acts["open " + n[r]] = ("open", r)
            else:
                reachable.append(r)
        here_set = set(here)
        for o, r in f["inreceptacle"]:
            if r in here_set and o in s.properties["toggleable"]:
                acts["use " + n[o]] = ("toggle", o)
        if not f["holdsany"]:
            pickupable = s.properties["pickupable"]
            for o, r in f["inreceptacle"]:
                if r in reachable and o in pickupable:
                    acts[f"take {n[o]} from {n[r]}"] = ("take", o, r, loc)
        for o in held:
            acts["examine " + n[o]] = ("examine_o", o)
            ot = s.otype.get(o)
            for r in reachable:
                if (s.rtype.get(r), ot) in s.can_contain:
                    acts[f"move {n[o]} to {n[r]}"] = ("move", o, r, loc)
            for verb, prop, rtype, fact, cleared in _TRANSFORMS:
                if o in s.properties[prop]:
                    for r in here:
                        if s.rtype.get(r) == rtype:
                            acts[f"{verb} {n[o]} with {n[r]}"] = ("transform", o, r, fact, cleared, verb)
            if ot in _KNIVES:
                for co, l in f["objectatlocation"]:
                    if l == loc and co in s.properties["sliceable"]:
                        acts[f"slice {n[co]} with {n[o]}"] = ("slice", co, o)
        self._actions = acts
        self._admissible = tuple(sorted(acts))
        return self._admissible

    # -- effects and feedback ------------------------------------------
    def _apply(self, kind: str, *args) -> str:
        s, f, n = self.spec, self.facts, self.spec.names
        if kind == "goto":
            r, dest = args
            f["atlocation"] = {(self.agent, dest)}
            return f"You arrive at {n[r]}. " + text.examine_receptacle(s, f, r)
        if kind == "open":
            f["opened"].add((args[0],))
            return f"You open the {n[args[0]]}. " + text.examine_receptacle(s, f, args[0])
        if kind == "close":
            f["opened"].discard((args[0],))
            return f"You close the {n[args[0]]}."
        if kind == "take":
            o, r, loc = args
            f["inreceptacle"].discard((o, r))
            f["not_inreceptacle"].add((o, r))
            f["objectatlocation"].discard((o, loc))
            f["holds"].add((self.agent, o))
            f["holdsany"] = {(self.agent,)}
            return f"You pick up the {n[o]} from the {n[r]}."
        if kind == "move":
            o, r, loc = args
            f["inreceptacle"].add((o, r))
            f["not_inreceptacle"].discard((o, r))
            f["objectatlocation"].add((o, loc))
            f["holds"].discard((self.agent, o))
            f["holdsany"] = set()
            return f"You move the {n[o]} to the {n[r]}."
        if kind == "transform":
            o, r, fact, cleared, verb = args
            f[fact].add((o,))
            if cleared:
                f[cleared].discard((o,))
            return f"You {verb} the {n[o]} using the {n[r]}."
        if kind == "toggle":
            o = args[0]
            f["istoggled"].add((o,))
            f["ison"].symmetric_difference_update({(o,)})
            return f"You turn on the {n[o]}."
        if kind == "slice":
            co, ko = args
            f["issliced"].add((co,))
            return f"You sliced the {n[co]} with the {n[ko]}."
        if kind == "examine_r":
            return text.examine_receptacle(s, f, args[0])
        if kind == "examine_o":
            return text.examine_object(s, f, args[0])
        if kind == "look":
            return text.look(s, f)
        if kind == "inventory":
            return text.inventory(s, f)
        if kind == "help":
            return text.HELP_TEXT
        raise AssertionError(f"unknown action kind {kind}")
