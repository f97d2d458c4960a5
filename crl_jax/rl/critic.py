"""The Actor-Critic variant (paper App. B): the actor judges a retrieved entry
before it acts on it.

At episode start, a guided episode's retrieved entry is shown to the actor
(the same model and sampler as its turns) with its task and first
observation, and the actor answers one of

    accept              the entry guides the episode as it is;
    refine: <text>      the episode reads the actor's rewrite instead;
    reject              the episode plays without a line.

The verdict adds to the credit the entry's extractor call receives (r(m),
paper Eq. 3): `critic_credit`. The judging exchange itself is not trained
(as in the authors' released code); a tiny actor learns to judge from its
warm start (warm_start.judge_fraction: accept its own game's plan, reject
another game's).

Formats: compact (tiny models) "goal / start / exp / judge:" and a bare
answer; chat: the answer as JSON inside <answer></answer> tags.
"""
from __future__ import annotations

import dataclasses
import json
import re

VERDICTS = ("accept", "refine", "reject")

JUDGE_SYSTEM = (
    "You are about to start a task. A note retrieved from earlier episodes may help or may "
    "mislead: it can be written for another task, another room, or simply be wrong. Decide "
    "before acting: accept the note as it is, refine it (rewrite it so it fits this task), "
    "or reject it. Think inside <think></think>, then answer inside <answer></answer> with "
    'a JSON object: {"verdict": "accept"}, {"verdict": "reject"} or '
    '{"verdict": "refine", "note": "<the rewritten note>"}.')

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


@dataclasses.dataclass(frozen=True)
class Judgement:
    """The actor's verdict on one entry; ``verdict`` None when the answer
    could not be read (the episode then plays without the entry)."""

    verdict: str | None
    note: str | None = None  # the rewrite, for "refine"

    def text_to_read(self, entry: str) -> str | None:
        """What the episode reads: the entry, the rewrite, or nothing."""
        if self.verdict == "accept":
            return entry
        if self.verdict == "refine":
            return self.note
        return None


def render_judge_compact(goal: str, first_observation: str, entry: str,
                         obs_chars: int = 240, exp_chars: int = 200) -> str:
    """The compact judging prompt: the actor prompt's goal, start and exp
    lines (so the same reading transfers), then "judge:"."""
    def clip(text: str, limit: int) -> str:
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return (f"goal: {goal}\nstart: {clip(first_observation, obs_chars)}\n"
            f"exp: {clip(entry, exp_chars)}\njudge: ")


def render_judge_chat_messages(goal: str, first_observation: str, entry: str) -> list[dict]:
    user = (f"Your task: {goal}\n\nWhat you see first:\n{first_observation}\n\n"
            f"Retrieved note:\n{entry}\n\nJudge the note.")
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def compact_answer(verdict: str, note: str | None = None) -> str:
    """The compact answer text for a verdict (warm-start targets)."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r}; valid: {VERDICTS}")
    return f"refine: {note}" if verdict == "refine" else verdict


def parse_judgement(text: str, fmt: str) -> Judgement:
    """The verdict in a generated judging answer (Judgement(None) when none)."""
    if fmt == "compact":
        line = text.strip().split("\n")[0].strip()
        head, sep, rest = line.partition(":")
        word = head.strip().lower()
        if word == "refine" and sep and rest.strip():
            return Judgement("refine", rest.strip())
        return Judgement(word if word in ("accept", "reject") and not rest.strip() else None)
    found = _ANSWER_RE.findall(text)
    if not found:
        return Judgement(None)
    try:
        answer = json.loads(found[-1].strip())
    except ValueError:
        return Judgement(None)
    if not isinstance(answer, dict):
        return Judgement(None)
    verdict, note = answer.get("verdict"), answer.get("note")
    if verdict == "refine":
        ok = isinstance(note, str) and note.strip()
        return Judgement("refine", note.strip()) if ok else Judgement(None)
    return Judgement(verdict if verdict in ("accept", "reject") else None)


def goal_verdict(goal: str, entry: str) -> Judgement:
    """The goal-match control's verdict: accept an entry "<goal>: <plan>"
    that names the episode's own goal, reject any other. A perfect judge of
    whose game an entry is for, in tasks whose goals tell games apart; it
    measures what the Actor-Critic variant could give, not a method."""
    named, sep, _ = entry.partition(": ")
    return Judgement("accept" if sep and named.strip() == goal.strip() else "reject")


@dataclasses.dataclass(frozen=True)
class CriticScores:
    """What each verdict adds to an entry's credit (paper App. B: accept 1,
    refine 0.5, reject 0)."""

    accept: float = 1.0
    refine: float = 0.5
    reject: float = 0.0


def critic_credit(outcome: float, verdict: str | None, scores: CriticScores) -> float | None:
    """Paper App. B: the actor's verdict on an entry is added to r(m) (Eq. 3).

    ``outcome`` is the episode's +1 / -1 outcome (less its baseline, see
    EpisodeRecord.outcome_baseline). Accepted or refined, the entry (or its
    rewrite) guided the episode: credit = outcome + score. Rejected, the
    episode played without it and its outcome says nothing about the entry:
    credit = the reject score alone. An unreadable verdict credits nothing
    (None), as the released code skips such an entry."""
    if verdict == "accept":
        return outcome + scores.accept
    if verdict == "refine":
        return outcome + scores.refine
    if verdict == "reject":
        return scores.reject
    return None
