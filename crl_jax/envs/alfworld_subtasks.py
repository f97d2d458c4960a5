"""Subgoals of the six ALFWorld task types, reported as subtask events.

Each task type has an ordered chain of subgoals; the last one is the win:

    pick_and_place_simple           locate, take, place
    look_at_obj_in_light            locate, take, toggle
    pick_clean_then_place_in_recep  locate, take, clean, place
    pick_heat_then_place_in_recep   locate, take, heat, place
    pick_cool_then_place_in_recep   locate, take, cool, place
    pick_two_obj_and_place          locate, take, place, take_second, place_second

with T the target object type and P the parent receptacle type:

    locate        an object of type T is held or in view: in a receptacle at
                  the agent's location that is open or has no door
    take          the agent holds a T
    clean/heat/cool  the agent holds a T that is clean / hot / cool
    place         (pick_two) a T the agent has held is in a P receptacle,
                  not in hand; (other types) the task is won
    take_second   the agent holds a T while another T is in a P receptacle
    toggle, place_second   the task is won

An event fires at the first step at which its subgoal holds *and* every
earlier subgoal of the chain has fired (several may fire at once, in chain
order). When the task is won every remaining event fires. Events satisfied
by the initial state are reported by reset. The predicates read only the
fact index ({predicate: set of id tuples}) that both engines expose, so the
real and the fast engine report identical events.
"""
from __future__ import annotations

from crl_jax.envs.alfworld_pddl import GameSpec

SUBTASKS = {
    "pick_and_place_simple": ("locate", "take", "place"),
    "look_at_obj_in_light": ("locate", "take", "toggle"),
    "pick_clean_then_place_in_recep": ("locate", "take", "clean", "place"),
    "pick_heat_then_place_in_recep": ("locate", "take", "heat", "place"),
    "pick_cool_then_place_in_recep": ("locate", "take", "cool", "place"),
    "pick_two_obj_and_place": ("locate", "take", "place", "take_second", "place_second"),
}
_MODIFIER_FACT = {"clean": "isclean", "heat": "ishot", "cool": "iscool"}


def target_types(params: dict) -> tuple[str, str]:
    """(object type, parent receptacle type) as PDDL type ids, e.g.
    ('alarmclocktype', 'desktype'); the parent is '' for look_at tasks."""
    obj = params.get("object_target", "")
    parent = params.get("parent_target", "")
    if not obj:
        raise ValueError(f"pddl_params lack an object_target: {params}")
    return obj.lower() + "type", (parent.lower() + "type") if parent else ""


class SubtaskTracker:
    """Fires the subtask events of one episode (reset with ``start``)."""

    def __init__(self, task_type: str, params: dict, spec: GameSpec):
        if task_type not in SUBTASKS:
            raise ValueError(f"unknown task_type {task_type!r}; valid: {tuple(SUBTASKS)}")
        self.subtasks = SUBTASKS[task_type]
        self.task_type = task_type
        otype, ptype = target_types(params)
        self._spec = spec
        self._targets = frozenset(o for o, t in spec.otype.items() if t == otype)
        self._parents = frozenset(r for r, t in spec.rtype.items() if t == ptype)
        self._fired = 0
        self._touched: set = set()

    def start(self, facts: dict, won: bool) -> tuple[str, ...]:
        self._fired = 0
        self._touched = set()
        return self.update(facts, won)

    def update(self, facts: dict, won: bool) -> tuple[str, ...]:
        held = {o for _, o in facts["holds"]} & self._targets
        self._touched |= held
        events = []
        while self._fired < len(self.subtasks):
            name = self.subtasks[self._fired]
            if not (won or self._holds(name, facts, held)):
                break
            events.append(name)
            self._fired += 1
        return tuple(events)

    def _holds(self, name: str, facts: dict, held: set) -> bool:
        if name == "locate":
            return bool(held) or any(self._visible(o, facts) for o in self._targets)
        if name == "take":
            return bool(held)
        if name in _MODIFIER_FACT:
            return any((o,) in facts[_MODIFIER_FACT[name]] for o in held)
        placed = {o for o, r in facts["inreceptacle"] if r in self._parents and o in self._targets}
        if name == "place" and self.task_type == "pick_two_obj_and_place":
            return bool((placed & self._touched) - held)
        if name == "take_second":
            return any(placed - {o} for o in held)
        return False  # place / toggle / place_second: only the win fires them

    def _visible(self, o: str, facts: dict) -> bool:
        loc = next(iter(facts["atlocation"]))[1]
        for obj, r in facts["inreceptacle"]:
            if obj == o and loc in self._spec.recep_locs.get(r, ()):
                if r not in self._spec.openable or (r,) in facts["opened"]:
                    return True
        return False
