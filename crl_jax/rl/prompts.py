"""What the actor and the extractor read and write.

Two formats share one interface:

- "compact" for the tiny CPU models: short tagged lines (goal, experience,
  a history window, observation) and a bare action answer ended by EOS; about
  100 tokens a turn, so RL fits a 2-core budget.
- "chat" for instruction-tuned checkpoints (paper scale): the tokenizer's
  chat template, the valid actions listed, and the paper's answer format
  ``<think>...</think><action>...</action>`` (sampling stops at </action>).

Prompts are rendered to token ids here; generated tokens are never
re-tokenised (the rollout keeps the sampled ids).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from crl_jax.envs.alfworld_text import objects_listed, place_of_look
from crl_jax.experience.operations import query_text
from crl_jax.rl import released_prompts

FORMATS = ("compact", "chat")
# The chat format's wording: this project's (generic) or the authors'
# released code's (crl_jax/rl/released_prompts.py).
PROMPT_STYLES = ("generic", "released")

ACTOR_SYSTEM = (
    "You are an agent acting in a text environment. Each turn you see your task, "
    "possibly an experience note from earlier episodes, recent history, the current "
    "observation and the valid actions. Think briefly inside <think></think>, then give "
    "exactly one action inside <action></action>. If a search tool is offered, you may "
    "instead write <ask>your question</ask> to get advice from earlier experience.")

EXTRACTOR_SYSTEM = (
    "You maintain an experience bank for an agent. Given a task, the agent's trajectory, "
    "its outcome and the experience entries it was shown, answer with a JSON list of at "
    "most 3 operations: {\"op\": \"add\", \"entry\": {\"title\": ..., \"content\": ...}}, "
    "{\"op\": \"update\", \"indices\": [i], \"entry\": ...} or {\"op\": \"return\"}. "
    "An entry states the situation, the action sequence that works, the decision logic, "
    "how to avoid the failure seen, and when it generalises.")

_ACTION_RE = re.compile(r"<action>(.*?)(?:</action>|$)", re.DOTALL)
_ASK_RE = re.compile(r"<ask>(.*?)(?:</ask>|$)", re.DOTALL)
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<function=", "</function>"  # tool-call actions (SWE tasks)
ASK_PREFIX = "ask:"  # compact format: "ask: <query>" calls the search-and-ask tool


@dataclasses.dataclass(frozen=True)
class TurnView:
    """Everything the actor sees at one turn."""

    goal: str
    observation: str
    history: tuple[tuple[str, str], ...] = ()  # (action, observation) pairs, oldest first
    experience: str | None = None
    valid_actions: tuple[str, ...] = ()
    first_observation: str = ""  # shown as "start:" when the rollout keeps it (room layout)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split()) if limit else text
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Actions left out of the compact prompt's "can:" line with list_actions=
# "non_navigation": moves whose targets the observation already names.
NAVIGATION_PREFIXES = ("go to ", "examine ", "look", "inventory", "help")


def listed_actions(actions: Sequence[str], mode: str) -> tuple[str, ...]:
    """The valid actions a compact prompt lists: none, all, or all but navigation."""
    if mode == "none":
        return ()
    if mode == "all":
        return tuple(actions)
    if mode == "non_navigation":
        return tuple(a for a in actions if not a.startswith(NAVIGATION_PREFIXES))
    raise ValueError(f"list_actions={mode!r}; valid: none, all, non_navigation")


def render_actor_compact(view: TurnView, obs_chars: int = 240, exp_chars: int = 200) -> str:
    lines = [f"goal: {view.goal}"]
    if view.experience:
        lines.append(f"exp: {_clip(view.experience, exp_chars)}")
    if view.first_observation:
        lines.append(f"start: {_clip(view.first_observation, obs_chars)}")
    for action, obs in view.history:
        # a search-and-ask reply is advice, as long as an experience line
        limit = exp_chars if action.startswith(ASK_PREFIX) else 80
        lines.append(f"did: {action} -> {_clip(obs, limit)}")
    obs = view.observation.strip()  # verbatim: grids need their spaces and line breaks
    lines.append("obs: " + (obs if len(obs) <= obs_chars else obs[: obs_chars - 3] + "..."))
    if view.valid_actions:
        lines.append("can: " + "; ".join(view.valid_actions))
    lines.append("act:")
    return "\n".join(lines) + " "


def render_actor_chat_messages(view: TurnView) -> list[dict]:
    parts = [f"Your task: {view.goal}"]
    if view.experience:
        parts.append(f"Experience from earlier episodes:\n{view.experience}")
    if view.history:
        parts.append("Recent history:\n" + "\n".join(
            f"> {a}\n{o}" for a, o in view.history))
    parts.append(f"Current observation:\n{view.observation}")
    if view.valid_actions:
        parts.append("Valid actions: " + ", ".join(view.valid_actions))
    return [{"role": "system", "content": ACTOR_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)}]


def render_actor_chat_followup(observation: str, valid_actions: Sequence[str] = ()) -> dict:
    """The user message that continues a conversation (rollout.conversation)
    after the actor's answer: what the environment said, and the valid
    actions when the format lists them."""
    parts = [f"Observation:\n{observation}"]
    if valid_actions:
        parts.append("Valid actions: " + ", ".join(valid_actions))
    return {"role": "user", "content": "\n\n".join(parts)}


def first_chat_messages(view: TurnView, style: str, env_name: str, max_asks: int) -> list[dict]:
    """The chat of an episode's first turn in ``style``; ``max_asks`` > 0
    when the search-and-ask tool is offered (the released style then
    explains it in the first user message)."""
    if style == "released":
        return [{"role": "system",
                 "content": released_prompts.system_prompt(env_name, view.experience)},
                {"role": "user", "content": released_prompts.first_user_message(
                    view.observation, view.goal, max_asks, view.valid_actions, env_name)}]
    return render_actor_chat_messages(view)


def followup_chat_message(observation: str, valid_actions: Sequence[str], style: str,
                          env_name: str = "") -> dict:
    """The user message after an answer (rollout.conversation)."""
    if style == "released":
        return {"role": "user", "content": released_prompts.observation_message(
            observation, valid_actions, env_name)}
    return render_actor_chat_followup(observation, valid_actions)


def ask_observation(advice: str | None, style: str, asks_left: int) -> str:
    """What a search-and-ask call returns to the actor."""
    if style == "released":
        return released_prompts.ask_reply(advice, asks_left)
    return f"advice: {advice}" if advice else "advice: nothing found"


def answer_stop_strings(fmt: str, style: str) -> tuple[str, ...]:
    """Where sampling of an actor's answer stops (besides end-of-sequence)."""
    if fmt == "compact":
        return ()
    return released_prompts.ANSWER_STOPS if style == "released" else ("</action>",)


def parse_turn(text: str, fmt: str, style: str, env_name: str,
               valid_actions: Sequence[str] = ()) -> tuple[str | None, str | None]:
    """(search-and-ask query, action) of an answer, either None."""
    if style == "released":
        return (released_prompts.parse_ask(text),
                released_prompts.parse_answer(text, env_name, valid_actions))
    return parse_ask(text, fmt), parse_action(text, fmt)


def shows_valid_actions(style: str, env_name: str) -> bool:
    """Whether the actor is shown the valid actions: always in the generic
    style; in the released style where no action templates are listed."""
    return style != "released" or not released_prompts.has_templates(env_name)


def format_failure_ends(style: str, env_name: str) -> bool:
    """Whether an answer without an action ends the episode when
    rollout.end_on_format_failure is on: always in the generic style; in the
    released style where the released code ends it (ALFWorld)."""
    return style != "released" or released_prompts.ends_on_format_failure(env_name)


# What the actor reads after an answer that names no action (none is sent
# to the environment, in either format).
NO_ACTION = "No action found in the answer; nothing happened."


def parse_action(text: str, fmt: str) -> str | None:
    """The action in a generated answer, or None when there is none."""
    if fmt == "compact":
        text = text.strip()
        if text.startswith(TOOL_CALL_OPEN):  # tool calls (SWE) span lines; keep the call whole
            end = text.find(TOOL_CALL_CLOSE)
            return text if end < 0 else text[:end + len(TOOL_CALL_CLOSE)]
        action = text.split("\n")[0].strip()
        return action or None
    match = _ACTION_RE.search(text)
    if not match:
        return None
    action = match.group(1).strip()
    return action or None


def parse_ask(text: str, fmt: str) -> str | None:
    """The query of a search-and-ask tool call in an answer, or None."""
    if fmt == "compact":
        line = text.strip().split("\n")[0].strip()
        query = line[len(ASK_PREFIX):].strip() if line.lower().startswith(ASK_PREFIX) else ""
        return query or None
    match = _ASK_RE.search(text)
    return (match.group(1).strip() or None) if match else None


@dataclasses.dataclass(frozen=True)
class ExtractorView:
    goal: str
    trajectory: str
    success: bool | None
    shown_entries: tuple[str, ...] = ()
    query: str = ""  # search-and-ask: the actor's question
    kind: str = "consolidate"
    # The receptacles the episode's room lists (households: what a lesson is
    # about; empty elsewhere, and then the prompt has no room line).
    room: str = ""


# The trajectory a compact consolidation prompt shows, in characters (clipped
# beyond; the extractor_fit diagnostic measures how often that happens).
EXTRACTOR_TRAJ_CHARS = 700


def render_extractor_compact(view: ExtractorView, traj_chars: int = EXTRACTOR_TRAJ_CHARS) -> str:
    """Sized so that a whole small-room ALFWorld game fits (~10 steps of
    ~70 characters): a clipped trajectory hides the actions a plan needs."""
    lines = [f"goal: {view.goal}"]
    if view.room:
        lines.append(f"room: {view.room}")
    if view.kind == "ask":
        lines.append(f"ask: {view.query}")
    else:
        outcome = "success" if view.success else "failure"
        lines.append(f"outcome: {outcome}")
        lines.append(f"traj: {_clip(view.trajectory, traj_chars)}")
    for i, entry in enumerate(view.shown_entries):
        lines.append(f"[{i}] {_clip(entry, 200)}")
    lines.append("ops:")
    return "\n".join(lines) + " "


def render_extractor_chat_messages(view: ExtractorView) -> list[dict]:
    shown = "\n".join(f"[{i}] {e}" for i, e in enumerate(view.shown_entries)) or "(none)"
    if view.kind == "ask":
        user = (f"Task: {view.goal}\nThe agent asks: {view.query}\nBest entry:\n{shown}\n"
                "Rewrite the entry so it answers the agent's situation; reply with the text only.")
    else:
        outcome = "SUCCESS" if view.success else "FAILURE"
        room = f"Room: {view.room}\n" if view.room else ""
        user = (f"Task: {view.goal}\n{room}Outcome: {outcome}\nTrajectory:\n{view.trajectory}\n"
                f"Entries shown to the agent:\n{shown}")
    return [{"role": "system", "content": EXTRACTOR_SYSTEM}, {"role": "user", "content": user}]


MERGE_INSTRUCTION = (
    "These experience entries come from the same bank. Merge entries that say the same "
    "thing, drop useless ones, keep the rest. Answer with a JSON list of the entry texts "
    "to keep; copy an entry you keep unchanged exactly.")


def render_merge(texts: Sequence[str], fmt: str) -> str | list[dict]:
    """The extractor's periodic-merge prompt (compact text, or chat messages)."""
    shown = "\n".join(f"[{i}] {t}" for i, t in enumerate(texts))
    if fmt == "compact":
        return f"merge:\n{shown}\nkeep: "
    return [{"role": "system", "content": EXTRACTOR_SYSTEM},
            {"role": "user", "content": f"{MERGE_INSTRUCTION}\n\n{shown}"}]


def parse_merge(response: str) -> list[str] | None:
    """The list of texts to keep in a merge answer, or None when malformed."""
    import json
    start, end = response.find("["), response.rfind("]")
    if start < 0 or end <= start:
        return None
    try:
        out = json.loads(response[start:end + 1])
    except ValueError:
        return None
    if not isinstance(out, list) or not all(isinstance(t, str) and t.strip() for t in out):
        return None
    return out


EVERY_OBJECT = "*"  # trajectory_text's focus that names every object a look showed


def trajectory_text(actions: Sequence[str], observations: Sequence[str], obs_chars: int = 40,
                    focus: str = "", places: bool = False) -> str:
    """A trajectory as "action -> observation" steps joined by " | ", each
    observation cut to ``obs_chars`` (0: whole).

    Lines that restate the goal ("Goal: ...", the first line of every MiniHack
    and Sokoban observation) are dropped before clipping: the extractor gets
    the goal separately, and otherwise the clip keeps nothing else of the step.

    With ``focus`` (an object type, "mug"), a clipped observation that named
    objects of that type the clip cut off ends with them ("[in view: mug 1,
    mug 2]"): cut to 40 characters, an arrival shows where the actor went,
    never what lay there (experience.trajectory_sightings). ``focus`` =
    EVERY_OBJECT names every object a look showed (experience.sightings_of=
    every). With ``places`` the tag also names where the look stood, when
    the observation says ("[seen at drawer 2: mug 1]",
    experience.sighting_places): the clip names it some thirty characters
    earlier, a long way for a tiny extractor to copy from."""
    findall = (objects_listed if focus == EVERY_OBJECT else
               re.compile(rf"\b{re.escape(focus)} \d+\b").findall if focus else None)

    def step(a: str, o: str) -> str:
        o = "\n".join(line for line in o.splitlines() if not line.startswith("Goal:"))
        if not o.strip():
            return a
        if not obs_chars:
            return f"{a} -> {o.strip()}"
        shown = _clip(o, obs_chars)
        if findall:
            lost = [n for n in dict.fromkeys(findall(o)) if n not in findall(shown)]
            place = place_of_look(o) if places else None
            tag = f"seen at {place}" if place else "in view"
            shown += f" [{tag}: {', '.join(lost)}]" if lost else ""
        return f"{a} -> {shown}"
    return " | ".join(step(a, o) if o else a for a, o in zip(actions, observations))


def retrieval_query(goal: str, observation: str, retrieval_key: str = "text") -> str:
    """The retrieval query at episode start: the paper's "goal: g,
    observation: o", or the goal alone when entries are found by their title
    (ExperienceConfig.retrieval_key="title")."""
    return query_text(goal, retrieval_key, observation)
