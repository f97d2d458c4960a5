"""The bookkeeping of one ``RolloutEngine.play`` call (crl_jax/rl/rollout.py).

``OwnedEpisodes``: the episodes this process plays, with what each one's next
prompt shows of its world (the last accepted observation, the last step's
info). ``SampledAnswer``: one live episode's answer of a turn, as the sampler
produced it and as it parses. An answer becomes a turn in one of three ways:
a search-and-ask call (the world waits), an answer that names no action
(nothing is sent), or an environment step.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from crl_jax.envs.base import StepInfo, StepResult
from crl_jax.rl import prompts
from crl_jax.rl.episode import Episode, Turn


@dataclasses.dataclass(frozen=True)
class SampledAnswer:
    """One live episode's answer this turn: the prompt ids it continued, the
    sampled ids and their log-probs, the decoded text, what the actor saw, and
    the parsed (search-and-ask query, action), either None."""
    prompt_ids: list[int]
    action_ids: list[int]
    logprobs: np.ndarray
    text: str
    view: prompts.TurnView
    query: str | None
    action: str | None

    def turn(self, action: str | None, observation: str, reward: float,
             events: tuple[str, ...], invalid: bool, asked: str | None = None) -> Turn:
        """The turn this answer made, token-exact (prompt and answer as sampled)."""
        return Turn(list(self.prompt_ids), list(self.action_ids), self.logprobs, self.text,
                    action, observation, reward, events, invalid, self.view, asked)


@dataclasses.dataclass
class OwnedEpisodes:
    """This process's episodes of one play() call (episode index -> value),
    and how many episodes, over all processes, ``progress`` has been told
    have ended."""
    indices: range
    episodes: dict[int, Episode]
    observations: dict[int, str]  # the last real observation (the prompt shows it)
    infos: dict[int, StepInfo]  # the last step's info (its valid actions)
    reported: int = 0

    @classmethod
    def reset(cls, envs: Sequence, tasks: Sequence, guided: Sequence[bool],
              indices: range) -> OwnedEpisodes:
        """Resets ``envs[i]`` to ``tasks[i]`` for each owned ``i`` and opens its episode."""
        episodes, infos, observations = {}, {}, {}
        for i in indices:
            obs, info = envs[i].reset(tasks[i])
            infos[i], observations[i] = info, obs
            episodes[i] = Episode(task=tasks[i], task_key=task_key(envs[i]), goal=info.goal,
                                  guided=bool(guided[i]), first_observation=obs,
                                  subtasks=tuple(info.subtasks), env_name=getattr(envs[i], "name", ""))
        return cls(indices, episodes, observations, infos)

    def live(self) -> list[int]:
        """The owned episodes not yet done, in episode order."""
        return [i for i in self.indices if not self.episodes[i].done]

    def num_done(self) -> int:
        return sum(self.episodes[i].done for i in self.indices)

    def report_ended(self, ended: int, progress: Callable[[int], None] | None) -> None:
        """Tells ``progress`` how many more episodes (all processes') have ended."""
        if progress is not None and ended > self.reported:
            progress(ended - self.reported)
        self.reported = ended

    def record_ask(self, i: int, answer: SampledAnswer, reply: tuple[str | None, str | None],
                   style: str, max_asks: int) -> None:
        """A search-and-ask call: the tool's (advice, extractor sample key)
        becomes the turn's observation and history; the world waits."""
        ep = self.episodes[i]
        advice, key = reply
        if key:
            ep.ask_keys.append(key)
        observation = prompts.ask_observation(advice, style, max_asks - ep.num_asks - 1)
        ep.turns.append(answer.turn(None, observation, 0.0, (), False, answer.query))

    def record_no_action(self, i: int, answer: SampledAnswer, style: str,
                         end_on_format_failure: bool, token_budget: int) -> None:
        """An answer that names no action: never sent, so the world stays as
        the prompt shows it; it may end the episode (format failure, budget)."""
        ep = self.episodes[i]
        ep.turns.append(answer.turn(None, prompts.NO_ACTION, 0.0, (), True))
        ep.format_failed = end_on_format_failure and prompts.format_failure_ends(
            style, ep.env_name)
        ep.done = ep.format_failed or ep.generated_tokens >= token_budget

    def record_step(self, i: int, answer: SampledAnswer, step: StepResult, token_budget: int) -> None:
        """The environment's answer to the action: the turn, the world's new
        state, and whether the episode ends (done, won, token budget)."""
        ep = self.episodes[i]
        ep.turns.append(answer.turn(answer.action, step.observation, float(step.reward),
                                    tuple(step.info.subtask_events),
                                    bool(step.info.invalid_action)))
        # A rejected action changes nothing in the world: the prompt keeps
        # showing the last real observation, the failure goes to history.
        if not step.info.invalid_action:
            self.observations[i] = step.observation
        self.infos[i] = step.info
        ep.won = ep.won or bool(step.info.won)
        if step.done or ep.won or ep.generated_tokens >= token_budget:
            ep.done = True


def task_key(env) -> str:
    """The bank partition of a task: the environment family (multi-task runs)."""
    return getattr(env, "name", "") or "default"
