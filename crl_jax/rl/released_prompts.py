"""The actor's prompt and answer format as the authors' released code has
them (rollout.prompt_style=released; BUILD.md "The paper presets and the
authors' released code" lists each behaviour with its source file).

Matched in behaviour, written here in this project's words, per environment:

- ALFWorld. The system message describes the household, lists the nine
  action templates and asks for ``<think>...</think>`` then
  ``<answer>...</answer>``. Each user message is the observation alone (no
  valid actions, no goal repeated); the first is the room description, the
  search-and-ask tool's instructions (when the tool is offered), then the
  task. An answer is read only as ``<think>..</think>`` followed by
  ``<answer>..</answer>`` at the end of the reply or of a line, and must
  match a template after "in" or "on" in a put is written "in/on" (the
  released clean-up rewrites an "in/on" already there into "in/on/on",
  which then fails its own check; that slip is not reproduced). Anything
  else is a format failure that ends the episode (with
  rollout.end_on_format_failure; reward advantages.format_failure_reward,
  the released -1). An arrival line that names only a location number
  ("You arrive at loc 5. ") loses that prefix.
- MiniHack. The system message asks to reach the down staircase in
  ``<think>``/``<answer>`` form; the first user message adds the game's
  instruction and the eight moves; each user message is the observation and
  a prompt to choose. The last ``<answer>..</answer>`` is read as a move's
  name, a one- or two-letter compass alias (n, ne, ...) or the move's index
  (the first number in the answer). A format failure costs the turn and
  nothing else: no step, reward 0, the episode goes on.
- Elsewhere (WebShop, Sokoban, SWE: no released prompt in this project) a
  generic system message with the same answer format, the valid actions
  listed in the user messages, the last ``<answer>`` taken as the action,
  and format failures handled as for MiniHack.

Everywhere: a guided episode's experience is appended to the first system
message under a short heading, numbered; a tool call is
``<knowledge_search_and_ask>query</knowledge_search_and_ask>``, answered
instead of any action while calls are left, the answer coming back as the
next observation ("Search results: ..."); earlier turns stay in the
conversation (rollout.conversation).
"""
from __future__ import annotations

import re
from typing import Sequence

ASK_TAG = "knowledge_search_and_ask"
ANSWER_STOPS = ("</answer>", f"</{ASK_TAG}>")
_ANSWER_RE = re.compile(r"<think>(.*?)</think>\s*<answer>(.*?)</answer>(?:$|\n)", re.DOTALL)
_LAST_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_SPECIAL = re.compile(r"<\|im_start\|>|<\|im_end\|>|</?think>|</?answer>")
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

MINIHACK_SYSTEM = (
    "You are finding your way through a dungeon level. Plan a path to the staircase down "
    "(>), keeping clear of dead ends, hazards such as lava, ice and traps, and monsters; "
    "note objects that could help, and look for another way when one is blocked. Put your "
    "reasoning inside <think> </think> and answer with one action inside <answer> </answer>.")
MINIHACK_INSTRUCTION = (
    "This is NetHack. Move through the dungeon, keep away from monsters and reach the goal. "
    "Each turn, reason and then give exactly one action, written "
    "<think>your reasoning</think><answer>one action from the list</answer>.")
# The eight moves in the game's order: an answer may name one by its index.
COMPASS = ("north", "east", "south", "west", "northeast", "southeast", "southwest", "northwest")
_COMPASS_ALIASES = {"n": "north", "e": "east", "s": "south", "w": "west", "ne": "northeast",
                    "se": "southeast", "sw": "southwest", "nw": "northwest"}
_FIRST_NUMBER = re.compile(r"\d+")

GENERIC_SYSTEM = (
    "You are an agent acting in a text environment to reach the task's goal. Each turn "
    "you will see everything from the turns before: your reasoning, your actions and what "
    "the environment answered. Think step by step, then give the action for this turn.\n\n"
    + _FORMAT)

EXPERIENCE_HEADING = ("Lessons distilled from earlier episodes. Let them guide you without "
                      "copying them blindly: some are too specific, so use only what fits "
                      "this task.\nLessons:")


def family(env_name: str) -> str:
    """Which released prompt an environment gets: alfworld, minihack or other."""
    if env_name.startswith("alfworld"):
        return "alfworld"
    return "minihack" if env_name.startswith("MiniHack-") else "other"


def system_prompt(env_name: str, experience: str | None) -> str:
    """The first turn's system message, with the episode's experience under its heading."""
    base = {"alfworld": ALFWORLD_SYSTEM, "minihack": MINIHACK_SYSTEM}.get(family(env_name),
                                                                         GENERIC_SYSTEM)
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
    (ALFWorld); elsewhere the valid actions are shown to the actor."""
    return family(env_name) == "alfworld"


def ends_on_format_failure(env_name: str) -> bool:
    """Whether a format failure ends the episode (ALFWorld) or only costs the turn."""
    return family(env_name) == "alfworld"


def first_user_message(observation: str, goal: str, max_asks: int,
                       valid_actions: Sequence[str] = (), env_name: str = "alfworld") -> str:
    tools = f"\n{tool_instructions(max_asks)}\n" if max_asks else "\n"
    kind = family(env_name)
    if kind == "alfworld":
        return (f"{observation_message(room_description(observation), (), env_name)}{tools}"
                f"Your task is: {goal}")
    if kind == "minihack":
        moves = ", ".join(valid_actions or COMPASS)
        return (f"{MINIHACK_INSTRUCTION}\nYour available actions are:\n{moves}\n"
                f"{observation_message(observation, (), env_name)}{tools}".rstrip("\n"))
    return (f"{observation_message(observation, valid_actions, env_name)}{tools}"
            f"Your task is: {goal}")


def observation_message(observation: str, valid_actions: Sequence[str] = (),
                        env_name: str = "alfworld") -> str:
    """A user message after an answer: the observation (and the valid actions
    where the environment has no templates and its observation does not
    already list them)."""
    if family(env_name) == "minihack":
        return f"Observation:\n{observation}\n\nThink it through, then choose your next action:\n"
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


def parse_answer(text: str, env_name: str, valid_actions: Sequence[str] = ()) -> str | None:
    """The action of a reply, or None for a format failure (see the module
    docstring for each environment's rule)."""
    kind = family(env_name)
    if kind == "alfworld":
        match = _ANSWER_RE.search(text)
        if not match:
            return None
        action = _put_in_on(match.group(2).strip())
        return action if _ALFWORLD_CHECK.search(action.lower()) else None
    answers = _LAST_ANSWER_RE.findall(text)
    if not answers:
        return None
    content = _SPECIAL.sub("", answers[-1]).strip()
    if kind == "minihack":
        return _minihack_move(content, tuple(valid_actions) or COMPASS)
    return content or None


def _minihack_move(content: str, names: tuple[str, ...]) -> str | None:
    """A move by name, compass alias or index (the first number in the answer)."""
    word = content.lower()
    if word in names:
        return word
    if _COMPASS_ALIASES.get(word) in names:
        return _COMPASS_ALIASES[word]
    number = _FIRST_NUMBER.search(word)
    if number and int(number.group()) < len(names):
        return names[int(number.group())]
    return None


def _put_in_on(action: str) -> str:
    """ "put X in Y" and "put X on Y" as the template writes them: "in/on"."""
    if not action.lower().startswith("put "):
        return action
    return _BARE_IN_ON.sub("in/on", action)


def parse_ask(text: str) -> str | None:
    match = _ASK_RE.search(text)
    return (match.group(1).strip() or None) if match else None
