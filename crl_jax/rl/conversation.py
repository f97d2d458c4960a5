"""An episode as one growing conversation (rollout.conversation).

Each turn's prompt is the last prompt, the last answer as sampled, and what
the chat template puts after it (``continuation_ids``), so the episode is one
token-exact sequence. ``ContinuedConversations`` keeps those sequences in
the sampler's KV cache from turn to turn (rollout.continue_cache): each row
sends only its new tokens, and rows whose episodes ended leave the cache,
so a turn costs what its live episodes add, not the whole conversation again.
"""
from __future__ import annotations

from collections.abc import Sequence


def continuation_ids(tokenizer, messages: list, follow: dict, answer_ids: Sequence[int],
                     stop_ids: Sequence[int]) -> list[int]:
    """Token ids of what the chat template puts between an assistant answer
    and the next generation (``follow``: the next user message): found by
    rendering the chat with a placeholder answer, so the answer is never
    re-tokenised. An answer that ended on the template's own end-of-turn
    token (one of ``stop_ids``) does not get it twice."""
    mark = "\x00ANSWER\x00"
    said = {"role": "assistant", "content": mark}
    opened = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    closed = tokenizer.apply_chat_template(messages + [said], add_generation_prompt=False)
    nxt = tokenizer.apply_chat_template(messages + [said, follow], add_generation_prompt=True)
    at = closed.find(mark)
    if at < 0 or closed[:at] != opened or not nxt.startswith(closed):
        raise ValueError("rollout.conversation: this chat template does not extend a "
                         "conversation by appending to it (it rewrites earlier turns), so "
                         "the episode cannot be one token-exact sequence")
    ids = tokenizer.encode(closed[at + len(mark):] + nxt[len(closed):])
    if answer_ids and ids and answer_ids[-1] in set(stop_ids) and ids[0] == answer_ids[-1]:
        ids = ids[1:]  # the answer's sampled end-of-turn token is the template's own
    return ids


class ContinuedConversations:
    """One ``RolloutEngine.play`` call's conversations in the sampler's
    cache: the episode of each cache row, and the sampler's state after the
    last turn (None before the first)."""

    def __init__(self):
        self.rows: list[int] = []
        self.state = None

    def sent(self, episodes: dict, live: Sequence[int],
             prompt_ids: Sequence[list[int]]) -> list[list[int]]:
        """What each live episode sends this turn: its whole prompt on the
        first turn, then the tokens after its last prompt and answer (which
        the cache holds: the answer's last token is still pending there)."""
        if self.state is None:
            return list(prompt_ids)
        # RolloutEngine._turn_prompt builds each prompt as the last prompt +
        # answer + the template's continuation, so the new tokens are its tail.
        return [list(ids[len(episodes[i].turns[-1].prompt_ids)
                         + len(episodes[i].turns[-1].action_ids):])
                for i, ids in zip(live, prompt_ids)]

    def state_for(self, sampler, rows: Sequence[int]):
        """The sampler state of episodes ``rows`` (every row's episode has
        played every turn so far; episodes only ever leave), or None on the
        first turn."""
        if self.state is None:
            return None
        where = {episode: row for row, episode in enumerate(self.rows)}
        missing = [i for i in rows if i not in where]
        if missing:
            raise ValueError(f"episodes {missing} have no conversation in the cache")
        return sampler.select_rows(self.state, [where[i] for i in rows])

    def keep(self, rows: Sequence[int], state) -> None:
        """The sampler's state after a turn on episodes ``rows``."""
        self.rows, self.state = list(rows), state
