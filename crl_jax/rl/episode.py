"""What a rollout produces: an episode's turns, token-exact, and the
training sequences made of them (one per turn, or the whole episode)."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from crl_jax.rl import critic, prompts
from crl_jax.rl.batch import Sample


@dataclasses.dataclass
class Turn:
    prompt_ids: list[int]
    action_ids: list[int]
    logprobs: np.ndarray
    text: str
    action: str | None
    observation: str
    reward: float
    events: tuple[str, ...]
    invalid: bool
    view: "prompts.TurnView | None" = None  # what the actor saw (for self-distillation)
    asked: str | None = None  # search-and-ask query of this turn (no environment step)


@dataclasses.dataclass
class Episode:
    task: str | int
    task_key: str
    goal: str
    guided: bool
    experience: str | None = None
    experience_id: int | None = None
    first_observation: str = ""
    turns: list[Turn] = dataclasses.field(default_factory=list)
    won: bool = False
    done: bool = False
    subtasks: tuple[str, ...] = ()
    env_name: str = ""
    ask_keys: list = dataclasses.field(default_factory=list)  # extractor samples of the asks
    format_failed: bool = False  # ended by an answer without an action (end_on_format_failure)
    retrieved: str | None = None  # the entry retrieval found (``experience``: what the actor reads)
    judgement: "critic.Judgement | None" = None  # the actor's verdict on it (Actor-Critic variant)
    retrieval_s: float = 0.0  # this episode's share of the retrieval call's time
    judge_s: float = 0.0  # and of the judging call's
    messages: list = dataclasses.field(default_factory=list)  # rollout.conversation: the chat so far

    @property
    def num_asks(self) -> int:
        return sum(t.asked is not None for t in self.turns)

    @property
    def reward(self) -> float:
        return float(sum(t.reward for t in self.turns))

    @property
    def num_actions(self) -> int:
        return sum(t.asked is None for t in self.turns)

    @property
    def generated_tokens(self) -> int:
        return sum(len(t.action_ids) for t in self.turns)

    def trajectory_text(self, obs_chars: int = 40, answers: str = "action", focus: str = "",
                        places: bool = False) -> str:
        """The episode as the extractor reads it: each turn's action (or its
        whole answer, reasoning included: answers="whole") and observation,
        clipped ones naming the ``focus`` type's objects they showed (and,
        with ``places``, where: prompts.trajectory_text)."""
        said = [t.text.strip() if answers == "whole" or not t.action else t.action
                for t in self.turns]
        return prompts.trajectory_text(said, [t.observation for t in self.turns], obs_chars, focus,
                                       places)

    def samples(self, turn_advantages: Sequence[float]) -> list[Sample]:
        """One training sequence per turn: prompt (mask 0) + sampled ids (mask 1)."""
        out = []
        for turn, adv in zip(self.turns, turn_advantages):
            if not turn.action_ids:
                continue
            n_p, n_a = len(turn.prompt_ids), len(turn.action_ids)
            out.append(Sample(
                tokens=turn.prompt_ids + turn.action_ids,
                loss_mask=[0] * n_p + [1] * n_a,
                old_logprobs=np.concatenate([np.zeros(n_p, np.float32),
                                             np.asarray(turn.logprobs, np.float32)]),
                advantage=float(adv)))
        return out


    def trajectory_sample(self, turn_advantages: Sequence[float]) -> Sample | None:
        """The whole episode as one training sequence (rollout.conversation):
        the last turn's prompt and answer, in which every turn's answer is
        trained (mask 1, its turn's advantage, its behaviour log-probs) and
        everything the actor did not sample (prompts, observations, the chat
        template's markers) is masked. None for an episode with no answer."""
        if not self.turns:
            return None
        last = self.turns[-1]
        tokens = list(last.prompt_ids) + list(last.action_ids)
        n = len(tokens)
        mask, adv, logprobs = np.zeros(n, np.int32), np.zeros(n, np.float32), np.zeros(n, np.float32)
        for k, (turn, a) in enumerate(zip(self.turns, turn_advantages)):
            start, end = len(turn.prompt_ids), len(turn.prompt_ids) + len(turn.action_ids)
            if tokens[start:end] != list(turn.action_ids) or tokens[:start] != list(turn.prompt_ids):
                raise ValueError(f"turn {k} is not a prefix of the episode's last prompt: "
                                 "whole-episode samples need rollout.conversation=true")
            mask[start:end], adv[start:end] = 1, a
            logprobs[start:end] = np.asarray(turn.logprobs, np.float32)
        if not mask.any():
            return None
        return Sample(tokens=tokens, loss_mask=mask.tolist(), old_logprobs=logprobs, advantage=adv)
