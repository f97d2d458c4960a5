"""Text rendering of MiniHack observations and action parsing by name.

The paper's MiniHack observation is plain text: the game message, the
agent's position and HP, a cropped text grid, a legend of the symbols on
it, the inventory and the list of valid actions. nle-language-wrapper does
not install on this platform, so the rendering is done here from NLE's own
arrays (``chars``, ``screen_descriptions``, ``blstats``, ``inv_*``).
"""
from __future__ import annotations

import re

import numpy as np

# NLE blstats indices (nle/nethack/nethack.py, NLE_BL_*).
BL_X, BL_Y, BL_HP, BL_HPMAX = 0, 1, 10, 11

# NLE action value (the key NetHack reads: nethack.CompassDirection.N is
# ord("k"), Command.PICKUP is ord(","), ...) -> the name the agent types.
# Plain ints so this module (and the registry) import without nle.
ACTION_NAMES = {
    ord("k"): "north", ord("l"): "east", ord("j"): "south", ord("h"): "west",
    ord("u"): "northeast", ord("n"): "southeast", ord("b"): "southwest",
    ord("y"): "northwest", ord(","): "pick up", ord("a"): "apply",
}

# Extra spellings a model may produce; each maps to a canonical name above.
ALIASES = {
    "n": "north", "e": "east", "s": "south", "w": "west",
    "ne": "northeast", "se": "southeast", "sw": "southwest", "nw": "northwest",
    "up": "north", "down": "south", "left": "west", "right": "east",
    "north east": "northeast", "south east": "southeast",
    "south west": "southwest", "north west": "northwest",
    "north-east": "northeast", "south-east": "southeast",
    "south-west": "southwest", "north-west": "northwest",
    "pickup": "pick up", "pick": "pick up", "pick up key": "pick up",
    "pick up the key": "pick up", "take key": "pick up", "take": "pick up",
    "apply key": "apply", "apply the key": "apply", "use key": "apply",
    "unlock door": "apply", "unlock": "apply",
}
# Longer inputs are never a valid action; cap the work spent on them.
MAX_ACTION_CHARS = 100
_MOVE_PREFIX = re.compile(r"^(?:go|move|walk|step|head)\s+(?:to\s+(?:the\s+)?)?")


def action_names(actions) -> tuple[str, ...]:
    """Names of an environment's action tuple, in the same order."""
    try:
        return tuple(ACTION_NAMES[int(a)] for a in actions)
    except KeyError as err:
        raise ValueError(f"no text name for MiniHack action {err}; "
                         f"known: {sorted(ACTION_NAMES.values())}") from None


def parse_action(text: str, names: tuple[str, ...]) -> int | None:
    """Index into ``names`` of the action ``text`` names, or None.

    Case, surrounding whitespace/punctuation, a leading "go"/"move" and the
    aliases above are forgiven; anything else is not an action.
    """
    if not isinstance(text, str) or len(text) > MAX_ACTION_CHARS:
        return None
    norm = " ".join(text.lower().strip().strip(".!\"'`").split())
    norm = _MOVE_PREFIX.sub("", norm)
    norm = ALIASES.get(norm, norm)
    return names.index(norm) if norm in names else None


def _decode(arr: np.ndarray) -> str:
    return bytes(arr).split(b"\x00", 1)[0].decode("latin-1")


def message_text(obs: dict) -> str:
    return _decode(obs["message"]).strip()


def inventory_lines(obs: dict) -> list[str]:
    lines = []
    for letter, row in zip(obs["inv_letters"], obs["inv_strs"]):
        if letter == 0:
            break
        lines.append(f"{chr(letter)}: {_decode(row)}")
    return lines


def crop_box(chars: np.ndarray, x: int, y: int, radius: int | None
             ) -> tuple[int, int, int, int]:
    """(y0, y1, x0, x1) of the non-blank bounding box, limited to ``radius``
    cells around the agent when given (the paper's cropped grid)."""
    ys, xs = np.nonzero(chars != ord(" "))
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    if radius is not None:
        y0, y1 = max(y0, y - radius), min(y1, y + radius + 1)
        x0, x1 = max(x0, x - radius), min(x1, x + radius + 1)
    return int(y0), int(y1), int(x0), int(x1)


def legend_lines(obs: dict, box) -> list[str]:
    """One line per distinct symbol on the cropped grid, with NetHack's own
    description of it (several if one symbol means several things)."""
    y0, y1, x0, x1 = box
    chars = obs["chars"][y0:y1, x0:x1]
    glyphs = obs["glyphs"][y0:y1, x0:x1]
    descs = obs["screen_descriptions"][y0:y1, x0:x1]
    found: dict[str, list[str]] = {}
    # One description per distinct glyph: decoding every cell is the slow part.
    shown = chars != ord(" ")
    _, first = np.unique(glyphs[shown], return_index=True)
    ys, xs = np.nonzero(shown)
    for yy, xx in zip(ys[first], xs[first]):
        sym = chr(chars[yy, xx])
        desc = _decode(descs[yy, xx])
        if sym == "@" and "Agent" in desc:
            desc = f"you ({desc})"
        if desc and desc not in found.setdefault(sym, []):
            found[sym].append(desc)
    return [f"{sym}: {', '.join(d)}" for sym, d in sorted(found.items())]


def render(obs: dict, goal: str, valid: tuple[str, ...],
           message: str | None = None, crop_radius: int | None = None) -> str:
    """The full text observation the agent reads."""
    bl = obs["blstats"]
    x, y = int(bl[BL_X]), int(bl[BL_Y])
    box = crop_box(obs["chars"], x, y, crop_radius)
    y0, y1, x0, x1 = box
    grid = "\n".join(_decode(row).rstrip() for row in obs["chars"][y0:y1, x0:x1])
    msg = message_text(obs) if message is None else message
    parts = [
        f"Goal: {goal}",
        f"Message: {msg or '(none)'}",
        f"Position: x={x - x0}, y={y - y0} (column, row on the map below). "
        f"HP: {int(bl[BL_HP])}/{int(bl[BL_HPMAX])}",
        "Map:", grid,
        "Legend:", *legend_lines(obs, box),
        "Inventory:", *(inventory_lines(obs) or ["(empty)"]),
        f"Valid actions: {', '.join(valid)}",
    ]
    return "\n".join(parts)
