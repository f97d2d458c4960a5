"""How well an actor imitates the expert, one decision at a time.

End-to-end success compounds every per-step error, so it hides *which*
decisions a weak actor gets wrong. Here the expert plays held-out tasks, and
at every state of its trajectory the actor (greedy) proposes the next action
from the prompt the rollout would render; the report gives, per kind of
expert decision (go, take, open, search, click[item id], ...), how often the
proposal equals the expert's action and how often the environment accepts it.

"Accepted" is the environment's own verdict when it is given a way to make
environments: the expert's actions are replayed up to the state and the
proposal is stepped there, so free-text actions (WebShop's search[...], whose
page lists no admissible actions) are judged as a rollout would judge them.
Without it, a proposal counts as accepted when the state's admissible list
holds it.

Its command line is the actor_step_accuracy diagnostic (docs/TRAINER.md,
"Measuring a warm start or a run").
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Callable, NamedTuple, Sequence

from crl_jax.rl import prompts
from crl_jax.training.warmstart import Demo, demo_view, line_states, walks_kept

# Bracketed item ids (WebShop's "b064787394") must be copied character by
# character from the page, the hardest decision for a tiny actor: grouped
# apart from clicks on labels so the report shows them on their own.
_BRACKET = re.compile(r"^\s*([a-z_]+)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_ITEM_ID = re.compile(r"^[a-z]\d{6,}$", re.IGNORECASE)


# The walks to where something is taken or used (warmstart.walks_kept), a row
# of their own besides "go": the go-tos a plan names, and the ones no prompt
# without a plan can predict (the other walks follow from the goal).
FETCH_WALK = "go, to fetch"
# The walks the state's line names (warmstart.line_states): the decisions
# reading the line decides. The line is the prompt's, or where the prompt
# shows none the demonstration's own (a lesson played by the informed
# expert, shown without its line: the same states, read from nothing).
# "go, to fetch" is no measure of reading: it holds walks no line names
# (to a lamp, to a second object), and not a first home that proved wrong.
LINE_WALK = "go, where the line says"

MISSES_KEPT = 3  # examples of wrong proposals kept per row: what the actor writes instead
# Where a missed walk the line names went instead, in the order checked: a
# reader that follows the line's other home first, one drawn to the place
# the goal names (the destination before the object is in hand), one that
# returns where it has been, or anywhere else.
MISS_KINDS = ("another home the line names", "a place the goal names", "a place already visited",
              "elsewhere", "no walk")
_WALK = re.compile(r"^go to ([a-z]+) \d+$")


class ExpertState(NamedTuple):
    view: prompts.TurnView  # what the actor sees
    action: str  # what the expert did
    admissible: frozenset  # the environment's admissible list at the state
    demo: Demo
    turn: int  # index of ``action`` in demo.actions


@dataclasses.dataclass
class VerbAccuracy:
    states: int = 0
    exact: int = 0  # proposal == expert action
    accepted: int = 0  # the environment accepts the proposal
    misses: list = dataclasses.field(default_factory=list)  # first (expert, proposal) that differ
    # Item-id rows: summed share of the id's characters the proposal has in
    # place. "accepted" is all or nothing; this shows how far copying got.
    id_chars: float = 0.0
    # LINE_WALK's row: its misses counted by where they went (MISS_KINDS).
    miss_kinds: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def as_dict(self) -> dict:
        n = max(self.states, 1)
        return {"states": self.states, "exact": self.exact / n, "accepted": self.accepted / n,
                "id_chars": self.id_chars / n, "misses": [list(m) for m in self.misses],
                "miss_kinds": dict(self.miss_kinds)}


def miss_kind(state: ExpertState, line: str, proposal: str | None) -> str:
    """Where a proposal that missed a walk ``line`` names went (MISS_KINDS)."""
    got = (proposal or "").strip()
    walk = _WALK.match(got)
    if walk is None:
        return MISS_KINDS[4]
    if line_states(line, got):
        return MISS_KINDS[0]
    if re.search(rf"\b{walk.group(1)}\b", state.view.goal):
        return MISS_KINDS[1]
    if got in state.demo.actions[:state.turn]:
        return MISS_KINDS[2]
    return MISS_KINDS[3]


def decision_kind(action: str) -> str:
    """The report's row for an expert action: its first word ("go", "take"),
    or for bracketed actions the verb ("search", "click"), with clicks on
    item ids as "click[item id]"."""
    m = _BRACKET.match(action)
    if m is None:
        return action.strip().split(" ")[0]
    verb, arg = m.group(1).lower(), m.group(2).strip()
    return f"{verb}[item id]" if _ITEM_ID.match(arg) else verb


def id_chars_right(expert: str, proposal: str | None) -> float | None:
    """For an expert click on an item id: the share of the id's characters
    that the proposal's bracket argument has at the same position (case
    ignored, as the environment ignores it); a random 10-digit guess after
    the fixed "b0" scores about 0.28. None when the expert's action is not
    an item-id click."""
    m = _BRACKET.match(expert)
    if m is None or not _ITEM_ID.match(m.group(2).strip()):
        return None
    gold = m.group(2).strip().lower()
    got = _BRACKET.match(proposal or "")
    arg = got.group(2).strip().lower() if got else ""
    return sum(a == b for a, b in zip(gold, arg)) / len(gold)


def expert_views(demos: Sequence[Demo], history: int, list_actions: str,
                 show_first_observation: bool,
                 experience: Callable[[Demo], str | None] | None = None) -> list[ExpertState]:
    """Every state of every winning demonstration, rendered as a rollout
    renders it, with the expert's action; ``experience(demo)`` gives the
    line its prompts show (default: none)."""
    out = []
    for d in demos:
        if not d.won:
            continue
        line = experience(d) if experience is not None else None
        for t, action in enumerate(d.actions):
            view = demo_view(d, t, history, list_actions, show_first_observation, line)
            out.append(ExpertState(view, action, frozenset(d.valid[t]) if d.valid else frozenset(),
                                   d, t))
    return out


def env_verdict(make: Callable[[], object]) -> Callable[[ExpertState, str | None], bool]:
    """accepts(state, proposal): replays the expert up to the state in an
    environment from ``make`` (one, reused) and steps the proposal; True when
    the environment does not flag it invalid. None (no action parsed) is
    never accepted."""
    env = make()

    def accepts(state: ExpertState, proposal: str | None) -> bool:
        if proposal is None:
            return False
        env.reset(state.demo.task)
        for a in state.demo.actions[:state.turn]:
            env.step(a)
        return not env.step(proposal).info.invalid_action

    return accepts


def step_accuracy(states: Sequence[ExpertState],
                  propose: Callable[[list[prompts.TurnView]], list[str | None]],
                  batch: int = 64,
                  accepts: Callable[[ExpertState, str | None], bool] | None = None
                  ) -> dict[str, VerbAccuracy]:
    """Per decision kind (see decision_kind), FETCH_WALK, LINE_WALK and "all": counts of states,
    exact matches and accepted proposals. ``propose`` maps views to actions
    (None where the answer holds none); ``accepts`` judges a proposal
    (default: it is in the state's admissible list, see env_verdict)."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if accepts is None:
        accepts = lambda state, got: got is not None and got.strip() in state.admissible  # noqa: E731
    stats: dict[str, VerbAccuracy] = collections.defaultdict(VerbAccuracy)
    fetch_walks: dict[int, set[int]] = {}  # per demo (by id): its walks_kept
    for i in range(0, len(states), batch):
        chunk = states[i:i + batch]
        proposals = propose([s.view for s in chunk])
        if len(proposals) != len(chunk):
            raise ValueError(f"propose returned {len(proposals)} actions for {len(chunk)} views")
        for state, got in zip(chunk, proposals):
            ok = bool(accepts(state, got))
            chars = id_chars_right(state.action, got)
            if id(state.demo) not in fetch_walks:
                fetch_walks[id(state.demo)] = walks_kept(state.demo.actions)
            walks = fetch_walks[id(state.demo)]
            fetch = (FETCH_WALK,) if state.turn in walks else ()
            line = state.view.experience or state.demo.experience
            named = (LINE_WALK,) if line and state.action.startswith("go to ") and \
                line_states(line, state.action) else ()
            for key in (decision_kind(state.action), *fetch, *named, "all"):
                s = stats[key]
                s.states += 1
                if chars is not None and key != "all":
                    s.id_chars += chars
                right = got is not None and got.strip() == state.action
                s.exact += right
                s.accepted += ok
                if not right and len(s.misses) < MISSES_KEPT:
                    s.misses.append((state.action, got))
                if not right and key == LINE_WALK:
                    s.miss_kinds[miss_kind(state, line, got)] += 1
    return dict(stats)


def format_report(stats: dict[str, VerbAccuracy]) -> str:
    rows = ["| expert decision | states | exact | accepted | id characters in place |",
            "|---|---|---|---|---|"]
    order = sorted((k for k in stats if k != "all"), key=lambda k: -stats[k].states) + ["all"]
    for k in order:
        if k in stats:
            d = stats[k].as_dict()
            chars = f"{d['id_chars']:.2f}" if k.endswith("[item id]") else ""
            rows.append(f"| {k} | {d['states']} | {d['exact']:.2f} | {d['accepted']:.2f} | {chars} |")
    shown = [k for k in order if k != "all" and stats.get(k) and stats[k].misses]
    if shown:
        rows.append("\nfirst misses (expert -> proposal):")
        rows += [f"- {k}: " + "; ".join(f"{gold} -> {got}" for gold, got in stats[k].misses)
                 for k in shown]
    kinds = stats[LINE_WALK].miss_kinds if LINE_WALK in stats else None
    if kinds:
        rows.append(f"\nwhere the misses of \"{LINE_WALK}\" went: "
                    + ", ".join(f"{k} {kinds[k]}" for k in MISS_KINDS if kinds[k]))
    return "\n".join(rows)
