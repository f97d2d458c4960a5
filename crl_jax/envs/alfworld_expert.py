"""An ALFWorld expert for demonstrations, in the spirit of alfworld's
handcoded expert: it searches receptacles one by one, opens closed ones,
takes the target, cleans/heats/cools it or finds the lamp, and places it.

It decides from what an agent sees (the feedback text and the admissible
commands) plus the task's targets, so it plays the real and the fast
engine alike. Unlike alfworld 0.4.2's expert, it tracks its hands from the
feedback ("You pick up the X ...", "You move the X to the Y."), so it does
not believe it still holds an object after `move X to Y` (the bug that
makes that expert lose most pick_two tasks). With a GameSpec it searches
receptacle types that can hold the target first (static affordances from
the game's canContain facts, not object positions).

    expert = AlfredExpert(record)
    expert.observe(obs, admissible)            # after reset
    cmd = expert.act()
    expert.observe(obs, admissible, cmd)       # after each step

Given a plan (the steps of an experience entry, e.g. "go to countertop 2 >
take apple 1 from countertop 2 > heat apple 1 with microwave 1 > move apple
1 to diningtable 1"), the expert is *informed*: it goes first to the
receptacles the plan names, in the plan's order, heats or places where
the plan says, and falls back to searching where a step turns out wrong.
Its actions then depend on the plan, which is what teaches a small actor
to read its experience line.
"""
from __future__ import annotations

import re

from crl_jax.envs.alfworld_data import GameRecord
from crl_jax.envs.alfworld_pddl import GameSpec
from crl_jax.envs.alfworld_text import place_of_look

_SEE = re.compile(r"you see (.*)\.$")
_EXAMINE = re.compile(r"^(?:On the (.+?), you see|The (.+?) is open\. In it, you see)")
PICK = re.compile(r"^You pick up the (.+?) from the (.+?)\.$")  # (object, receptacle)
_MOVE = re.compile(r"^You move the (.+?) to the (.+?)\.$")
_TRANSFORMED = re.compile(r"^You (heat|cool|clean) the (.+?) using the (.+?)\.$")
# A plan step that names a place: (the step's head, the receptacle).
STEP_PLACE = re.compile(
    r"^(go to |open |take .+? from |move .+? to |(?:heat|cool|clean) .+? with )(.+)$")
_APPLIANCE = {"pick_heat_then_place_in_recep": ("heat", "microwave"),
              "pick_cool_then_place_in_recep": ("cool", "fridge"),
              "pick_clean_then_place_in_recep": ("clean", "sinkbasin")}


def kind_of(name: str) -> str:
    """'desk 2' -> 'desk'."""
    return name.rsplit(" ", 1)[0]


def plan_receptacles(plan) -> list[str]:
    """The receptacles a plan sends the expert to, in order, without
    repeats: where it walked to take or use something, took, transformed and
    placed. Not the ones it opened: a searching expert's plan also lists the
    closed receptacles it looked into in vain (its plan keeps only the walks
    that found something)."""
    out = []
    for step in plan:
        m = STEP_PLACE.match(step.strip())
        if m and m.group(1) != "open " and m.group(2) not in out:
            out.append(m.group(2))
    return out


def room_receptacles(first_observation: str) -> list[str]:
    """The receptacles of the room, from an episode's first observation."""
    parts = first_observation.split("\n\n")
    return parse_seen(parts[1]) if len(parts) > 1 else []


def parse_seen(text: str) -> list[str]:
    """Object names in '... you see a x 1, a y 2, and a z 3.'; [] for nothing."""
    m = _SEE.search(text)
    if not m or m.group(1) == "nothing":
        return []
    items = [s.strip() for s in m.group(1).split(", ")]
    return [re.sub(r"^(and )?a ", "", s) for s in items]


class AlfredExpert:
    def __init__(self, record: GameRecord, spec: GameSpec | None = None, plan=None):
        p = record.params
        self.task_type = record.task_type
        self.obj = p["object_target"].lower()
        self.parent = p.get("parent_target", "").lower()
        self.lamp = p.get("toggle_target", "").lower()
        self.needed = 2 if self.task_type == "pick_two_obj_and_place" else 1
        self.verb, self.appliance = _APPLIANCE.get(self.task_type, ("", ""))
        self._likely = None
        if spec is not None:
            otype = self.obj + "type"
            self._likely = {t[:-4] for t, o in spec.can_contain if o == otype}
        self.receptacles: list[str] = []
        self.seen: dict[str, list[str]] = {}
        self.visited: set[str] = set()
        self.current = ""
        self.holding = ""
        self.transformed: set[str] = set()
        self.placed: set[str] = set()
        self.dest = ""
        self.admissible: tuple[str, ...] = ()
        self._cursor = 0
        self.plan = tuple(plan or ())
        self._named = plan_receptacles(self.plan)  # where the plan says to go, in order

    # -- perception ----------------------------------------------------
    def observe(self, feedback: str, admissible, action: str | None = None) -> None:
        self.admissible = tuple(admissible)
        if action is None and "Looking quickly around you, you see" in feedback:
            self.receptacles = parse_seen(feedback.split("\n\n")[1])  # the room, in its order
        for cmd in self.admissible:
            if cmd.startswith("go to ") and cmd[6:] not in self.receptacles:
                self.receptacles.append(cmd[6:])
        if action is None:
            order = {name: i for i, name in enumerate(self.receptacles)}
            named = {name: i for i, name in enumerate(self._named)}
            self.receptacles.sort(key=lambda name: (named.get(name, len(named)),
                                                    not self._likely_holds(name), order[name]))
            return
        if (place := place_of_look(feedback)):
            self.current = place
            if "is closed" not in feedback:
                self.visited.add(self.current)
                self.seen[self.current] = parse_seen(feedback)
        elif (m := _EXAMINE.match(feedback)):  # a receptacle beside the one we went to
            rec = m.group(1) or m.group(2)
            self.visited.add(rec)
            self.seen[rec] = parse_seen(feedback)
        elif (m := PICK.match(feedback)):
            self.holding = m.group(1)
            self.seen.get(m.group(2), []).count(m.group(1)) and self.seen[m.group(2)].remove(m.group(1))
        elif (m := _MOVE.match(feedback)):
            obj, rec = m.groups()
            self.holding = ""
            self.seen.setdefault(rec, []).append(obj)
            if kind_of(rec) == self.parent and kind_of(obj) == self.obj:
                self.placed.add(obj)
                self.dest = rec
        elif (m := _TRANSFORMED.match(feedback)):
            self.transformed.add(m.group(2))

    def _likely_holds(self, name: str) -> bool:
        return self._likely is None or kind_of(name) in self._likely

    # -- decision --------------------------------------------------------
    def act(self) -> str:
        held_target = self.holding and kind_of(self.holding) == self.obj
        if self.holding and not held_target:  # something else in hand: put it back anywhere
            moves = [c for c in self.admissible if c.startswith(f"move {self.holding} to ")]
            return moves[0] if moves else self._explore()
        if held_target:
            if self.task_type == "look_at_obj_in_light":
                return self._find_lamp()
            if self.verb and self.holding not in self.transformed:
                return self._transform()
            return self._place()
        return self._find_object()

    def _go(self, rec: str) -> str:
        cmd = f"go to {rec}"
        return cmd if cmd in self.admissible else self._open_or(rec)

    def _open_or(self, rec: str) -> str:
        if f"open {rec}" in self.admissible:
            return f"open {rec}"
        return f"examine {rec}" if f"examine {rec}" in self.admissible else "look"

    def _explore(self) -> str:
        """Go to (or open) the next receptacle not yet looked into."""
        if self.current and f"open {self.current}" in self.admissible:
            return f"open {self.current}"
        todo = [r for r in self.receptacles if r not in self.visited]
        if not todo:  # everything seen: search again (objects may have moved)
            self.visited.clear()
            todo = [r for r in self.receptacles if r != self.current] or self.receptacles
        return self._go(todo[0])

    def _find_object(self) -> str:
        for cmd in self.admissible:
            if cmd.startswith(f"take {self.obj} "):
                obj, _, rec = cmd[5:].partition(" from ")
                if kind_of(obj) == self.obj and obj not in self.placed and rec != self.dest:
                    return cmd
        for rec, objs in self.seen.items():
            if rec != self.dest and any(kind_of(o) == self.obj and o not in self.placed for o in objs):
                if rec != self.current:
                    return self._go(rec)
        return self._explore()

    def _transform(self) -> str:
        cmd = f"{self.verb} {self.holding} with "
        for c in self.admissible:
            if c.startswith(cmd):
                return c
        targets = [r for r in self.receptacles if kind_of(r) == self.appliance]
        named = [r for r in self._named if r in targets]  # the plan's appliance first
        return self._go((named or targets)[0]) if targets else self._explore()

    def _find_lamp(self) -> str:
        for c in self.admissible:
            if c.startswith(f"use {self.lamp} "):
                return c
        for rec, objs in self.seen.items():
            if rec != self.current and any(kind_of(o) == self.lamp for o in objs):
                return self._go(rec)
        return self._explore()

    def _place(self) -> str:
        if not self.dest:
            for rec, objs in self.seen.items():  # a parent that already holds a target
                if kind_of(rec) == self.parent and any(kind_of(o) == self.obj for o in objs):
                    self.dest = rec
            if not self.dest:
                parents = [r for r in self.receptacles if kind_of(r) == self.parent]
                if not parents:
                    return self._explore()
                named = [r for r in self._named if r in parents]  # where the plan places it
                self.dest = (named or parents)[0]
        cmd = f"move {self.holding} to {self.dest}"
        if cmd in self.admissible:
            return cmd
        if self.current == self.dest or f"open {self.dest}" in self.admissible:
            return self._open_or(self.dest)
        return self._go(self.dest)


class AlfWorldEnvExpert:
    """The expert behind the registry's interface: ``reset()`` and
    ``act(env) -> str`` on an alfworld_env.AlfWorldEnv, reading the env's
    last observation, admissible list and sent action."""

    def __init__(self, plan=None):
        self.plan = tuple(plan or ())  # an informed expert's plan steps (see AlfredExpert)
        self.reset()

    def reset(self) -> None:
        self._expert: AlfredExpert | None = None
        self._episode = None

    def act(self, env) -> str:
        from crl_jax.envs.alfworld_env import spec_for
        if self._expert is None or self._episode != env.episode:
            self._expert = AlfredExpert(env.record, spec_for(env.record), self.plan)
            self._episode = env.episode
            self._expert.observe(env.last_observation, env.last_admissible)
        elif env.last_action is not None:
            self._expert.observe(env.last_observation, env.last_admissible, env.last_action)
        return self._expert.act()
