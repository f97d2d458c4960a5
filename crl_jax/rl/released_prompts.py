"""The actor's prompt and answer format as the authors' released code has
them (rollout.prompt_style=released; BUILD.md "The paper presets and the
authors' released code" lists each behaviour with its source file).

Matched in behaviour, written here in this project's words:

- The system message describes the environment, lists its action templates
  (ALFWorld: nine) and asks for ``<think>...</think>`` then
  ``<answer>...</answer>``. A guided episode's experience is appended to the
  system message of its first turn, under a short heading, numbered.
- Each user message is the observation alone: no list of valid actions
  (outside ALFWorld, where this project has no released prompt, the valid
  actions are listed), no goal repeated. The first one is the room description, then the
  search-and-ask tool's instructions (when the tool is offered), then the
  task. Earlier turns stay in the conversation (rollout.conversation).
- An answer is read only as ``<think>..</think>`` followed by
  ``<answer>..</answer>`` at the end of the reply or of a line. ALFWorld's
  answer must match one of its templates, after "in" or "on" in a put is
  written "in/on" (the released clean-up rewrites an "in/on" already there
  into "in/on/on", which then fails its own check; that slip is not
  reproduced). Anything else is a format failure: with
  rollout.end_on_format_failure the episode ends with
  advantages.format_failure_reward (the released -1).
- A tool call is ``<knowledge_search_and_ask>query</knowledge_search_and_ask>``;
  while calls are left it is answered instead of any action, the answer
  coming back as the next observation ("Search results: ...").
- An arrival line that names only a location number ("You arrive at loc 5. ")
  loses that prefix before the actor reads it.
"""
from __future__ import annotations

import re
from typing import Sequence

ASK_TAG = "knowledge_search_and_ask"
ANSWER_STOPS = ("</answer>", f"</{ASK_TAG}>")
_ANSWER_RE = re.compile(r"<think>(.*?)</think>\s*<answer>(.*?)</answer>(?:$|\n)", re.DOTALL)
_ASK_RE = re.compile(rf"<{ASK_TAG}>(.*?)</{ASK_TAG}>", re.DOTALL)

_ITEM = r"\w+\s+\d+"  # an ALFWorld object or receptacle: a name and its number
ALFWORLD_TEMPLATES = ("go to {recep}", "take {obj} from {recep}", "put {obj} in/on {recep}",
                      "open {recep}", "use {obj}/{recep}", "clean {obj} with {recep}",
                      "heat {obj} with {recep}", "cool {obj} with {recep}", "inventory")
# What counts as one of the templates above (searched in the lower-cased
# answer, as the released check does: "close", "look" and "examine" are not
# among them and fail).
_ALFWORLD_CHECK = re.compile("|".join((
    rf"go\s+to\s+{_ITEM}", rf"take\s+{_ITEM}\s+from\s+{_ITEM}", rf"put\s+{_ITEM}\s+in/on\s+{_ITEM}",
    rf"open\s+{_ITEM}", r"^use \w+ \d+$", rf"(?:clean|heat|cool)\s+{_ITEM}\s+with\s+{_ITEM}",
    r"inventory")))
_BARE_IN_ON = re.compile(r"(?<![/\w])(?:in|on)(?![/\w])", re.IGNORECASE)
_LOC_ARRIVAL = re.compile(r"^You arrive at loc \d+\. ")

_FORMAT = ("Do one action a turn. Reason first, then act, in exactly this form:\n"
           "<think>your reasoning</think>\n<answer>your action</answer>")

ALFWORLD_SYSTEM = (
    "You are a capable agent in a household. Your job is to reach the task's goal by "
    "taking valid actions. At the start you are told the goal and shown the room: the "
    "objects and receptacles you may act on; act only on those you know of.\n"
    "Each turn you will see everything from the turns before: your reasoning, your "
    "actions and what the environment answered. Think step by step, plan from what you "
    "know, then give the action for this turn.\n"
    "When the environment says \"Nothing happens\", that action did not help: try "
    "something else.\n\n"
    "Actions you can take:\n"
    + "\n".join(f"{i}. {t}" for i, t in enumerate(ALFWORLD_TEMPLATES, 1))
    + "\n{obj} is an object and {recep} a receptacle.\n\n" + _FORMAT)

GENERIC_SYSTEM = (
    "You are an agent acting in a text environment to reach the task's goal. Each turn "
    "you will see everything from the turns before: your reasoning, your actions and what "
    "the environment answered. Think step by step, then give the action for this turn.\n\n"
    + _FORMAT)

EXPERIENCE_HEADING = ("Lessons distilled from earlier episodes. Let them guide you without "
                      "copying them blindly: some are too specific, so use only what fits "
                      "this task.\nLessons:")


def system_prompt(env_name: str, experience: str | None) -> str:
    """The first turn's system message: the environment's (ALFWorld's, or a
    generic one), with the episode's experience under its heading."""
    base = ALFWORLD_SYSTEM if has_templates(env_name) else GENERIC_SYSTEM
    if not experience:
        return base
    return f"{base}\n\n{EXPERIENCE_HEADING}\n\n1. {experience}"


def tool_instructions(max_asks: int) -> str:
    """What the first user message says about search-and-ask."""
    return (f"A knowledge base of earlier experience can answer a question when you are "
            f"unsure or stuck. Ask by writing <{ASK_TAG}>your question</{ASK_TAG}> instead of "
            f"an answer; describe what you see, what blocks you, what you tried and what you "
            f"need to know. You may ask at most {max_asks} times in this task.")


def room_description(observation: str) -> str:
    """The first observation without its banner and task line (the task is
    stated separately)."""
    keep = [line for line in observation.splitlines()
            if line.strip() and not line.startswith("-=") and not line.startswith("Your task is")]
    return "\n".join(keep)


def has_templates(env_name: str) -> bool:
    """Whether the system prompt lists the environment's action templates
    (ALFWorld). Elsewhere this project has no released prompt, and the user
    messages list the valid actions, as nothing else says how to write one."""
    return env_name.startswith("alfworld")


def first_user_message(observation: str, goal: str, max_asks: int,
                       valid_actions: Sequence[str] = ()) -> str:
    tools = f"\n{tool_instructions(max_asks)}\n" if max_asks else "\n"
    return (f"{observation_message(room_description(observation), valid_actions)}{tools}"
            f"Your task is: {goal}")


def observation_message(observation: str, valid_actions: Sequence[str] = ()) -> str:
    """A user message after an answer: the observation alone (and the valid
    actions where the system prompt has no templates)."""
    listed = f"Valid actions: {', '.join(valid_actions)}\n" if valid_actions else ""
    return f"Observation:\n{clean_observation(observation)}\n{listed}"


def clean_observation(observation: str) -> str:
    return _LOC_ARRIVAL.sub("", observation, count=1)


def ask_reply(advice: str | None, asks_left: int) -> str:
    """The observation a tool call returns."""
    text = f"Search results: {advice if advice else 'nothing relevant was found.'}"
    if asks_left <= 0:
        text += "\n\nYou have used all your questions; do not ask again."
    return text


def parse_answer(text: str, env_name: str) -> str | None:
    """The action of a reply, or None for a format failure: no
    <think>..</think><answer>..</answer>, or (ALFWorld) an answer that
    matches none of the templates."""
    match = _ANSWER_RE.search(text)
    if not match:
        return None
    action = match.group(2).strip()
    if not has_templates(env_name):
        return action or None
    action = _put_in_on(action)
    return action if _ALFWORLD_CHECK.search(action.lower()) else None


def _put_in_on(action: str) -> str:
    """ "put X in Y" and "put X on Y" as the template writes them: "in/on"."""
    if not action.lower().startswith("put "):
        return action
    return _BARE_IN_ON.sub("in/on", action)


def parse_ask(text: str) -> str | None:
    match = _ASK_RE.search(text)
    return (match.group(1).strip() or None) if match else None
