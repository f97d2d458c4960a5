"""Parse an ALFWorld PDDL problem into a GameSpec the fast engine plays.

What the real engine (TextWorld's PDDL environment on Fast Downward) does
with the same text, and what this module therefore reproduces:

* Fast Downward lower-cases every name, so all names here are lower-case.
* The entities TextWorld knows are the arguments of the initial facts; the
  AlfredDemangler numbers them (see ``display_names``).
* The goal is a formula of and/or/not/exists/=/atoms, checked under the
  closed-world assumption (``Goal.holds``).
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Iterable

_ATOM = re.compile(r"\(\s*([A-Za-z_][\w-]*)((?:\s+[^\s()]+)*)\s*\)")
_TOKEN = re.compile(r"\(|\)|[^\s()]+")

# Unary static properties of objects/receptacles kept by the engine.
OBJECT_PROPERTIES = ("pickupable", "cleanable", "heatable", "coolable", "toggleable",
                     "sliceable", "isreceptacleobject")
# Unary dynamic facts of objects (changed by actions or given in the problem).
OBJECT_STATES = ("isclean", "ishot", "iscool", "istoggled", "issliced", "ison")
# Predicates some action of the domain changes; all others are constants.
DYNAMIC_PREDICATES = OBJECT_STATES + ("atlocation", "inreceptacle", "objectatlocation", "opened",
                                      "holds", "holdsany", "checked", "not_inreceptacle")


@dataclasses.dataclass(frozen=True)
class GameSpec:
    """The initial state and constants of one game, names lower-cased.

    Dicts map ids (mangled ALFRED names) to things; sets of pairs keep the
    PDDL's relational semantics (an object may sit in two receptacles).
    """

    entity_ids: tuple[str, ...]          # arguments of the initial facts
    names: dict                          # id -> display name ("desk 2")
    objects: frozenset                   # ids typed object
    receptacles: frozenset               # ids typed receptacle
    otype: dict                          # object id -> otype ("appletype")
    rtype: dict                          # receptacle id -> rtype
    recep_locs: dict                     # receptacle id -> frozenset of locations
    openable: frozenset
    can_contain: frozenset               # (rtype, otype)
    properties: dict                     # property -> frozenset of object ids
    init_agent_loc: str
    init_inrec: frozenset                # (object, receptacle)
    init_objloc: frozenset               # (object, location)
    init_opened: frozenset
    init_states: dict                    # state predicate -> frozenset of objects
    init_holds: frozenset
    inrec_object: frozenset              # (inner object, outer object), static
    goal: "Goal"


def display_names(entity_ids: Iterable[str]) -> dict:
    """AlfredDemangler's names: 'desk_bar__minus_00...' -> 'desk 2'.

    The name is the part before the first '_bar_' (plus 'basin' when the id
    contains 'basin'); instances of a name are numbered count..1 in sorted-id
    order (the Demangler pops from the end of [1..count]). Ids without
    '_bar_' keep their text and get a trailing space, as in the original.
    """
    ids = sorted(set(entity_ids))
    counts = collections.Counter()
    base = {}
    for ident in ids:
        head, sep, _ = ident.partition("_bar_")
        if sep:
            name = head + "basin" if "basin" in ident else head
            base[ident] = name
            counts[name] += 1
    next_number = dict(counts)
    names = {}
    for ident in ids:
        if ident in base:
            name = base[ident]
            names[ident] = f"{name} {next_number[name]}"
            next_number[name] -= 1
        else:
            names[ident] = f"{ident} "
    return names


def _section(text: str, keyword: str) -> str:
    """The balanced s-expression starting at '(<keyword>' (keyword included)."""
    start = text.find("(" + keyword)
    if start < 0:
        raise ValueError(f"PDDL problem has no ({keyword} section")
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise ValueError(f"unbalanced parentheses in ({keyword} section")


def _parse_sexpr(text: str):
    tokens = _TOKEN.findall(text)
    stack: list[list] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) < 2:
                raise ValueError("unbalanced ')' in PDDL goal")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError("unbalanced PDDL goal expression")
    return stack[0][0]


class Goal:
    """A PDDL goal formula evaluated on a fact index {predicate: set of tuples}.

    Existential conjunctions are solved by joining atoms against the facts
    (bind variables from matching facts), so a check costs microseconds.
    """

    def __init__(self, goal_text: str, types: dict):
        expr = _parse_sexpr(goal_text.lower())
        if not (isinstance(expr, list) and expr and expr[0] == ":goal" and len(expr) == 2):
            raise ValueError("goal must look like (:goal <formula>)")
        self._types = types  # id -> PDDL type, to enumerate unconstrained variables
        self._static: dict = {}
        self._flat: dict = {}  # id(exists node) -> (conjuncts, variables)
        self.formula = self._compile(expr[1])

    def _compile(self, e):
        if not isinstance(e, list) or not e:
            raise ValueError(f"bad goal formula {e!r}")
        head = e[0]
        if head in ("and", "or"):
            return (head, [self._compile(x) for x in e[1:]])
        if head == "not":
            return ("not", self._compile(e[1]))
        if head == "exists":
            variables, types, pending = [], [], []
            for tok in e[1]:
                if tok == "-":
                    continue
                if tok.startswith("?"):
                    pending.append(tok)
                else:  # a type closes the pending variables
                    variables += pending
                    types += [tok] * len(pending)
                    pending = []
            variables += pending
            types += ["object"] * len(pending)
            return ("exists", list(zip(variables, types)), self._compile(e[2]))
        return ("atom", head, tuple(e[1:]))

    def holds(self, facts: dict) -> bool:
        return self._eval(self.formula, {}, facts)

    def _eval(self, f, binding, facts) -> bool:
        kind = f[0]
        if kind == "and":
            return all(self._eval(x, binding, facts) for x in f[1])
        if kind == "or":
            return any(self._eval(x, binding, facts) for x in f[1])
        if kind == "not":
            return not self._eval(f[1], binding, facts)
        if kind == "atom":
            args = tuple(binding.get(a, a) for a in f[2])
            if f[1] == "=":
                return args[0] == args[1]
            return args in facts.get(f[1], ())
        # exists: flatten the body into conjuncts (once) and solve by joining.
        flat = self._flat.get(id(f))
        if flat is None:
            conjuncts, variables = [], dict(f[1])
            self._flatten(f[2], conjuncts, variables)
            flat = self._flat[id(f)] = (conjuncts, variables)
        return self._solve(flat[0], dict(binding), flat[1], facts)

    def _flatten(self, f, out, variables):
        if f[0] == "and":
            for x in f[1]:
                self._flatten(x, out, variables)
        elif f[0] == "exists" and not (set(dict(f[1])) & set(variables)):
            variables.update(dict(f[1]))
            self._flatten(f[2], out, variables)
        else:
            out.append(f)

    def index_static(self, facts: dict, dynamic: Iterable[str]) -> None:
        """Index the facts of predicates no action changes by (position,
        value), so atoms like (objectType ?o AppleType) look up their few
        matches instead of scanning every fact."""
        dynamic = set(dynamic)
        self._static = {}
        for pred, tuples in facts.items():
            if pred in dynamic:
                continue
            index: dict = {}
            for t in tuples:
                for pos, value in enumerate(t):
                    index.setdefault((pos, value), []).append(t)
            self._static[pred] = index

    def _candidates(self, pred, pattern, variables, facts):
        index = self._static.get(pred)
        if index is not None:
            for pos, p in enumerate(pattern):
                if p not in variables:
                    return index.get((pos, p), ())
        return facts.get(pred, ())

    def _solve(self, conjuncts, binding, variables, facts) -> bool:
        # Extend the binding from the positive atom with the fewest candidate
        # facts; check every other conjunct once it is fully bound.
        best, best_pattern, best_cands = None, None, None
        for c in conjuncts:
            if c[0] != "atom" or c[1] == "=":
                continue
            pattern = tuple(binding.get(a, a) for a in c[2])
            if not any(p in variables for p in pattern):
                continue
            cands = self._candidates(c[1], pattern, variables, facts)
            if best is None or len(cands) < len(best_cands):
                best, best_pattern, best_cands = c, pattern, cands
        if best is None:
            unbound = [v for v in variables if v not in binding]
            if unbound:  # a variable no positive atom constrains: enumerate its type
                var = unbound[0]
                for ident, typ in self._types.items():
                    if typ == variables[var]:
                        binding[var] = ident
                        if self._solve(conjuncts, binding, variables, facts):
                            return True
                del binding[var]
                return False
            return all(self._eval(c, binding, facts) for c in conjuncts)
        rest = [c for c in conjuncts if c is not best]
        for fact in best_cands:
            new = {}
            for p, v in zip(best_pattern, fact):
                if p in variables:  # still-unbound variable
                    if new.setdefault(p, v) != v:
                        break
                elif p != v:
                    break
            else:
                if self._solve(rest, {**binding, **new}, variables, facts):
                    return True
        return False


def parse_problem(text: str) -> GameSpec:
    """Parse an ALFWorld PDDL problem (objects, init facts, goal)."""
    low = text.lower()
    objects_section = _section(low, ":objects")
    types = {}
    for line in objects_section[len("(:objects"):-1].split("\n"):
        parts = line.split()
        if len(parts) == 3 and parts[1] == "-":
            types[parts[0]] = parts[2]
    init_section = _section(low, ":init")
    facts = collections.defaultdict(set)
    entities = set()
    for m in _ATOM.finditer(init_section[len("(:init"):]):
        args = tuple(m.group(2).split())
        facts[m.group(1)].add(args)
        entities.update(args)
    if not entities:
        raise ValueError("PDDL problem has no initial facts")
    agent_locs = [loc for _, loc in facts["atlocation"]]
    if len(agent_locs) != 1:
        raise ValueError(f"expected one atLocation fact for the agent, got {len(agent_locs)}")
    recep_locs = collections.defaultdict(set)
    for r, loc in facts["receptacleatlocation"]:
        recep_locs[r].add(loc)
    unary = lambda pred: frozenset(a[0] for a in facts.get(pred, ()))  # noqa: E731
    objects = frozenset(i for i, t in types.items() if t == "object" and i in entities)
    receptacles = frozenset(i for i, t in types.items() if t == "receptacle" and i in entities)
    goal = Goal(_section(low, ":goal"), types)
    goal.index_static(facts, DYNAMIC_PREDICATES)
    return GameSpec(
        entity_ids=tuple(sorted(entities)),
        names=display_names(entities),
        objects=objects,
        receptacles=receptacles,
        otype={o: t for o, t in facts["objecttype"]},
        rtype={r: t for r, t in facts["receptacletype"]},
        recep_locs={r: frozenset(v) for r, v in recep_locs.items()},
        openable=unary("openable"),
        can_contain=frozenset(facts["cancontain"]),
        properties={p: unary(p) for p in OBJECT_PROPERTIES},
        init_agent_loc=agent_locs[0],
        init_inrec=frozenset(facts["inreceptacle"]),
        init_objloc=frozenset(facts["objectatlocation"]),
        init_opened=unary("opened"),
        init_states={p: unary(p) for p in OBJECT_STATES},
        init_holds=frozenset(o for _, o in facts["holds"]),
        inrec_object=frozenset(facts["inreceptacleobject"]),
        goal=goal,
    )
