"""The rollout engine: many episodes played in lockstep by one sampler.

Each turn, every live episode's prompt is rendered and tokenised, the whole
batch is sampled in one call of the jitted KV-cache sampler, actions are
parsed and the environments stepped. Episodes end on success, on the
environment's done, at the turn cap, or when the token budget is spent.

Trajectories are token-exact: a turn keeps its prompt ids and the sampled ids
and log-probs exactly as the sampler produced them; the training sample of a
turn is prompt (mask 0) + sampled tokens (mask 1). Generated text is decoded
only to parse the action, never re-encoded. How a sampled answer becomes a
turn, and the episodes of one call, are in crl_jax/rl/rollout_turns.py.

With ``rollout.conversation`` the conversation also continues in the
sampler: the batch's KV cache (models/sampler.py GenerationState) is kept
from turn to turn, each row sends only its new tokens, and rows whose
episodes ended are dropped from it (``rollout.continue_cache``).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from crl_jax.rl import critic, prompts
from crl_jax.envs.base import StepInfo
from crl_jax.rl.episode import Episode, Turn  # noqa: F401  (re-exported)
from crl_jax.rl.rollout_turns import OwnedEpisodes, SampledAnswer
from crl_jax.rl.conversation import ContinuedConversations, continuation_ids
from models.distributed import ProcessShare
from models.sampler import Sampler
from models.sampling_ops import SamplingConfig, strip_stop_tokens


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    max_turns: int = 30
    """Turns an episode may take before it ends unfinished."""
    max_new_tokens: int = 16  # per turn
    max_prompt_tokens: int = 512  # longer prompts keep their last tokens
    token_budget: int = 100_000  # generated tokens per episode
    history: int = 1  # (action, observation) pairs shown
    temperature: float = 1.0
    """Sampling temperature (0 = greedy)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1 = off)."""
    top_k: int = 0
    """Sample among the k likeliest tokens (0 = off)."""
    format: str = "compact"
    """Prompt format: compact (tiny models: goal, observation, short history) or chat."""
    prompt_style: str = "generic"
    """Chat format wording: generic (this project's prompt: valid actions listed,
    <action> tags) or released (the authors' released code: the environment's
    action templates in the system message, <think>/<answer>, experience in the
    system message, no valid-action list; crl_jax/rl/released_prompts.py).
    released needs conversation=true."""
    # compact format: which valid actions the prompt lists (none | all | non_navigation)
    list_actions: str = "none"
    obs_chars: int = 240  # compact format: the current observation is cut to this length
    show_first_observation: bool = False  # compact format: keep the episode's first observation
    max_asks: int = 2  # search-and-ask calls per episode (paper: 2), when the trainer offers the tool
    end_on_format_failure: bool = False
    """An answer that names no action ends the episode (the authors' released
    code; its reward is advantages.format_failure_reward). False: the turn is
    counted as rejected and the episode goes on."""
    judge_max_new_tokens: int = 96
    """Tokens the actor may write when it judges a retrieved entry (Actor-Critic
    variant, experience.actor_critic; a refined entry is written in full)."""
    conversation: bool = False
    """Chat format: the episode is one growing conversation (every earlier
    answer and observation kept, as the authors' released code does) and each
    turn's prompt extends the last prompt and answer token for token, so the
    episode can train as one sequence (train.sample_unit=episode). An episode
    whose conversation outgrows max_prompt_tokens ends there, unfinished.
    False: each turn's prompt is rendered afresh from the last `history` steps."""
    continue_cache: bool = True
    """With conversation: each turn sends the sampler only the conversation's
    new tokens (the end of the last answer, the environment's message, the
    generation prompt), appended to the rows' KV caches; rows whose episodes
    ended leave the cache. False: every turn prefills the whole conversation
    again (for comparison: the same tokens, prefill growing with the square
    of the turns). A prompt rendered afresh each turn (no conversation) is
    not an extension of the last one and always re-encodes."""

    def __post_init__(self):
        if self.format not in prompts.FORMATS:
            raise ValueError(f"format={self.format!r}; valid: {prompts.FORMATS}")
        if self.max_turns < 1 or self.max_new_tokens < 1:
            raise ValueError("max_turns and max_new_tokens must be >= 1")
        if self.conversation and self.format != "chat":
            raise ValueError("rollout.conversation needs rollout.format=chat (a compact prompt "
                             "is rendered afresh each turn)")
        if self.prompt_style not in prompts.PROMPT_STYLES:
            raise ValueError(f"prompt_style={self.prompt_style!r}; valid: {prompts.PROMPT_STYLES}")
        if self.prompt_style == "released" and not self.conversation:
            raise ValueError("rollout.prompt_style=released needs rollout.conversation=true (the "
                             "released prompt keeps every earlier turn in the conversation)")
        prompts.listed_actions((), self.list_actions)  # validates the name


SAMPLING_STATS = ("tokens", "seconds", "prefilled", "cache_tokens", "cache_slots", "max_slots")

# (queries, task keys) -> one (text, entry id) or None per query
Retriever = Callable[[list[str], list[str]], list[tuple[str, int] | None]]
# (queries, task keys) -> one (advice text or None, extractor sample key or None) per query
Asker = Callable[[list[str], list[str]], list[tuple[str | None, str | None]]]


class RolloutEngine:
    def __init__(self, sampler: Sampler, tokenizer, config: RolloutConfig,
                 retrieval_key: str = "text", share: ProcessShare | None = None):
        self.sampler, self.tokenizer, self.config = sampler, tokenizer, config
        # several processes: which episodes this one plays (default: this
        # process's place in the JAX job; models/distributed.py)
        self.share = share or ProcessShare.current()
        self.retrieval_key = retrieval_key  # the bank's: what a retrieval query is made of
        # What the last play() asked of the sampler for the actor's turns:
        # tokens sampled, seconds in the sampler (rollout throughput), tokens
        # prefilled, the cache's real tokens and written slots after each
        # turn (summed over turns) and its most slots a row.
        self.sampling_stats = dict.fromkeys(SAMPLING_STATS, 0)
        self._cache: ContinuedConversations | None = None  # one play() call's, if continued
        stops = set(getattr(tokenizer, "eos_ids", ()) or ()) | {tokenizer.eos_id}
        self.sampling = SamplingConfig(
            temperature=config.temperature, top_p=config.top_p, top_k=config.top_k,
            max_new_tokens=config.max_new_tokens, stop_token_ids=tuple(sorted(stops)),
            stop_strings=prompts.answer_stop_strings(config.format, config.prompt_style),
            check_every=config.max_new_tokens if config.format == "compact" else 16)

    def prompt_ids(self, view: prompts.TurnView) -> list[int]:
        """The token ids of the actor's prompt for ``view`` (compact or chat format)."""
        if self.config.format == "compact":
            ids = self.tokenizer.encode(prompts.render_actor_compact(view, self.config.obs_chars))
        else:
            text = self.tokenizer.apply_chat_template(prompts.render_actor_chat_messages(view),
                                                      add_generation_prompt=True)
            ids = self.tokenizer.encode(text)
        return ids[-self.config.max_prompt_tokens:]

    def play(self, envs: Sequence, tasks: Sequence, guided: Sequence[bool],
             retrieve: Retriever | None = None, seed: int = 0,
             ask: Asker | None = None,
             progress: Callable[[int], None] | None = None,
             judge: str | None = None) -> list[Episode]:
        """Plays ``len(tasks)`` episodes, episode i on ``envs[i]`` (reset to tasks[i]).

        Guided episodes get the retriever's entry for "goal: g, observation: o"
        (or g alone: prompts.retrieval_query) at episode start (none if the
        bank has nothing close enough or nothing yet); with ``judge``
        ("actor" or the "goal" control) it is judged first (`judge`, paper
        App. B). ``progress(n)`` is told how many episodes ended (progress
        bars); the calls add up to ``len(tasks)``.

        With several processes (``share``), each resets and steps only the
        environments of the episodes it owns, every turn samples all live
        episodes in one global call, and every process gets all episodes.
        """
        if not (len(envs) == len(tasks) == len(guided)):
            raise ValueError(f"{len(envs)} envs, {len(tasks)} tasks, {len(guided)} flags")
        self.sampling_stats = dict.fromkeys(SAMPLING_STATS, 0)  # this call's actor turns
        self._cache = (ContinuedConversations()
                       if self.config.conversation and self.config.continue_cache else None)
        asks_offered = self.config.max_asks if ask is not None else 0  # the first message says so
        own = OwnedEpisodes.reset(envs, tasks, guided, self.share.owned(len(tasks)))
        rng = np.random.default_rng(seed)
        if retrieve is not None and any(guided):
            self._retrieve(own, guided, retrieve, judge, rng)
        for _ in range(self.config.max_turns):
            if not self._play_turn(own, envs, rng, ask, asks_offered, progress):
                break
        return self._finish(own, len(tasks), progress)

    def _retrieve(self, own: OwnedEpisodes, guided: Sequence[bool], retrieve: Retriever,
                  judge: str | None, rng: np.random.Generator) -> None:
        """Each guided episode's entry (or none), then, with ``judge``, the
        verdict on it. Every process asks for every guided episode, in
        episode order, so that each bank replica counts the same retrievals
        (Eq. 6)."""
        episodes = own.episodes
        asked = [q for part in self.share.gather(
            [(i, prompts.retrieval_query(episodes[i].goal, own.observations[i], self.retrieval_key),
              episodes[i].task_key) for i in own.indices if guided[i]]) for q in part]
        start = time.perf_counter()
        found = retrieve([q for _, q, _ in asked], [k for _, _, k in asked])
        per_query = (time.perf_counter() - start) / len(asked)
        for (i, _, _), hit in zip(asked, found):
            if i not in episodes:
                continue
            episodes[i].retrieval_s = per_query
            if hit is not None:
                episodes[i].experience, episodes[i].experience_id = hit
                episodes[i].retrieved = hit[0]
        if judge:
            hits = [i for (i, _, _), hit in zip(asked, found) if hit is not None]
            self._judge_everyones(own, guided, hits, judge, rng)

    def _judge_everyones(self, own: OwnedEpisodes, guided: Sequence[bool], hits: list[int],
                         judge: str, rng: np.random.Generator) -> None:
        """One sampler call judges the entries of every process's episodes
        ``hits`` (episode order); each process keeps its own episodes' verdicts."""
        everyone = dict(pair for part in self.share.gather(
            [(i, own.episodes[i]) for i in own.indices if guided[i]]) for pair in part)
        everyone.update(own.episodes)  # this process's own episodes, not copies
        self.judge([everyone[i] for i in hits], int(rng.integers(2**31)), judge)

    def _play_turn(self, own: OwnedEpisodes, envs: Sequence, rng: np.random.Generator,
                   ask: Asker | None, asks_offered: int,
                   progress: Callable[[int], None] | None) -> bool:
        """One turn of every live episode: every process's live prompts, in
        episode order, sampled in one call; each answer becomes a tool call,
        a rejected answer or an environment step. False when no process had
        a live episode (nothing played)."""
        cfg = self.config
        live, views, prompt_ids = self._live_prompts(own, asks_offered)
        sent = self._cache.sent(own.episodes, live, prompt_ids) if self._cache else prompt_ids
        parts = self.share.gather((live, sent, own.num_done()))
        own.report_ended(sum(n for _, _, n in parts), progress)
        batch = [p for _, ids, _ in parts for p in ids]
        if not batch:
            return False
        rows = [i for episodes, _, _ in parts for i in episodes]
        first = sum(len(ids) for _, ids, _ in parts[:self.share.index])  # this process's first row
        tokens, logprobs = self._sample(batch, rows, first, len(live), rng)
        answers = []
        for j, i in enumerate(live):
            text = self.tokenizer.decode(strip_stop_tokens(tokens[j], self.sampling))
            answers.append(SampledAnswer(prompt_ids[j], tokens[j], logprobs[j], text, views[j],
                                         *prompts.parse_turn(text, cfg.format, cfg.prompt_style,
                                                             own.episodes[i].env_name,
                                                             views[j].valid_actions)))
        asking = [j for j, a in enumerate(answers) if a.query and ask is not None
                  and own.episodes[live[j]].num_asks < cfg.max_asks]
        replies = self._ask(ask, asking, [answers[j].query for j in asking],
                            [own.episodes[live[j]].task_key for j in asking])
        for j, i in enumerate(live):
            if j in replies:
                own.record_ask(i, answers[j], replies[j], cfg.prompt_style, cfg.max_asks)
            elif answers[j].action is None:
                own.record_no_action(i, answers[j], cfg.prompt_style, cfg.end_on_format_failure,
                                     cfg.token_budget)
            else:
                own.record_step(i, answers[j], envs[i].step(answers[j].action), cfg.token_budget)
        return True

    def _live_prompts(self, own: OwnedEpisodes, asks_offered: int
                      ) -> tuple[list[int], list[prompts.TurnView], list[list[int]]]:
        """This process's live episodes, what each one sees and its prompt
        ids. With rollout.conversation, an episode whose conversation outgrew
        the prompt ends here (and is not live)."""
        cfg = self.config
        live = own.live()
        views = [self._view(own.episodes[i], own.observations[i], own.infos[i]) for i in live]
        prompt_ids = [self._turn_prompt(own.episodes[i], v, asks_offered)
                      for i, v in zip(live, views)]
        if cfg.conversation:
            fits = [j for j, p in enumerate(prompt_ids) if len(p) <= cfg.max_prompt_tokens]
            for j in set(range(len(live))) - set(fits):
                own.episodes[live[j]].done = True
            live, views, prompt_ids = ([x[j] for j in fits] for x in (live, views, prompt_ids))
        return live, views, prompt_ids

    def _sample(self, batch: list[list[int]], rows: list[int], first: int, count: int,
                rng: np.random.Generator) -> tuple[list[list[int]], list[np.ndarray]]:
        """Samples every process's prompts ``batch`` (episodes ``rows``) in one
        call; returns the sampled ids and log-probs of this process's
        ``count`` rows, from ``first``."""
        start = time.perf_counter()
        state = self._cache.state_for(self.sampler, rows) if self._cache else None
        result = self.sampler.generate(batch, self.sampling, rng=int(rng.integers(2**31)),
                                       decode=self.tokenizer.decode, state=state)
        stats = self.sampling_stats
        stats["seconds"] += time.perf_counter() - start
        stats["tokens"] += sum(len(t) for t in result.tokens)
        for key in ("prefilled", "cache_tokens", "cache_slots"):
            stats[key] += getattr(result, key)
        stats["max_slots"] = max(stats["max_slots"], result.slots)
        if self._cache is not None:
            self._cache.keep(rows, result.state)
        return result.tokens[first:first + count], result.logprobs[first:first + count]

    def _finish(self, own: OwnedEpisodes, total: int,
                progress: Callable[[int], None] | None) -> list[Episode]:
        """Ends every episode (the last turn's and the turn cap's go to
        ``progress``) and returns all processes' episodes, in episode order."""
        if progress is not None and total > own.reported:
            progress(total - own.reported)
        for ep in own.episodes.values():
            ep.done = True
        if self.share.count == 1:
            return [own.episodes[i] for i in own.indices]
        return [ep for part in self.share.gather([own.episodes[i] for i in own.indices])
                for ep in part]

    def _ask(self, ask: Asker | None, rows: list[int], queries: list[str],
             keys: list[str]) -> dict[int, tuple]:
        """The search-and-ask tool's answers for this process's asking
        ``rows`` (row -> answer). With several processes every process asks
        every process's queries, in process order, so each bank replica and
        extractor buffer records the same calls."""
        if ask is None:
            return {}
        parts = self.share.gather(list(zip(queries, keys)))
        every = [qk for part in parts for qk in part]
        if not every:
            return {}
        answers = ask([q for q, _ in every], [k for _, k in every])
        first = sum(len(part) for part in parts[:self.share.index])
        return dict(zip(rows, answers[first:first + len(rows)]))

    def judge(self, episodes: Sequence[Episode], seed: int, source: str = "actor") -> None:
        """Actor-Critic variant (paper App. B): the actor judges each episode's
        retrieved entry in one sampler call; the episode then reads the entry,
        the actor's rewrite of it, or nothing (crl_jax/rl/critic.py).
        ``source="goal"`` is a control, not a method: the entry is accepted
        exactly when it names the episode's own goal (critic.goal_verdict)."""
        if not episodes:
            return
        if source == "goal":
            for ep in episodes:
                ep.judgement = critic.goal_verdict(ep.goal, ep.retrieved)
                ep.experience = ep.judgement.text_to_read(ep.retrieved)
            return
        if source != "actor":
            raise ValueError(f"judge={source!r}; valid: actor, goal")
        cfg = self.config
        if cfg.format == "compact":
            ids = [self.tokenizer.encode(critic.render_judge_compact(
                ep.goal, ep.first_observation, ep.retrieved, cfg.obs_chars)) for ep in episodes]
        else:
            ids = [self.tokenizer.encode(self.tokenizer.apply_chat_template(
                critic.render_judge_chat_messages(ep.goal, ep.first_observation, ep.retrieved),
                add_generation_prompt=True)) for ep in episodes]
        sampling = dataclasses.replace(
            self.sampling, max_new_tokens=cfg.judge_max_new_tokens,
            stop_strings=("</answer>",) if cfg.format == "chat" else (),
            check_every=cfg.judge_max_new_tokens if cfg.format == "compact" else 16)
        start = time.perf_counter()
        result = self.sampler.generate([p[-cfg.max_prompt_tokens:] for p in ids], sampling,
                                       rng=seed, decode=self.tokenizer.decode)
        per_entry = (time.perf_counter() - start) / len(episodes)
        for j, ep in enumerate(episodes):
            text = self.tokenizer.decode(strip_stop_tokens(result.tokens[j], sampling))
            ep.judgement = critic.parse_judgement(text, cfg.format)
            ep.experience = ep.judgement.text_to_read(ep.retrieved)
            ep.judge_s = per_entry

    def _turn_prompt(self, ep: Episode, view: prompts.TurnView, asks_offered: int = 0) -> list[int]:
        """The ids the actor continues this turn. With rollout.conversation:
        the first turn's chat, then the last prompt + the last answer as
        sampled + the template's continuation (end of the answer, the next
        user message, the generation prompt), so every prompt extends the
        last one token for token."""
        if not self.config.conversation:
            return self.prompt_ids(view)
        style = self.config.prompt_style
        if not ep.turns:
            ep.messages = prompts.first_chat_messages(view, style, ep.env_name, asks_offered)
            return self.tokenizer.encode(self.tokenizer.apply_chat_template(
                ep.messages, add_generation_prompt=True))
        last = ep.turns[-1]
        follow = prompts.followup_chat_message(last.observation, view.valid_actions, style,
                                               ep.env_name)
        ids = (list(last.prompt_ids) + list(last.action_ids)
               + continuation_ids(self.tokenizer, ep.messages, follow, last.action_ids,
                                  self.sampling.stop_token_ids))
        ep.messages = ep.messages + [{"role": "assistant", "content": last.text}, follow]
        return ids

    def _view(self, ep: Episode, obs: str, info: StepInfo) -> prompts.TurnView:
        hist = tuple((t.action or t.text.strip(), t.observation)
                     for t in ep.turns[-self.config.history:]) if self.config.history else ()
        if ep.turns and ep.turns[-1].asked is not None:  # the advice must stay visible
            last = ep.turns[-1]
            hist = (hist[:-1] if hist else ()) + ((f"ask: {last.asked}", last.observation),)
        actions = tuple(info.admissible_actions)
        if not prompts.shows_valid_actions(self.config.prompt_style, ep.env_name):
            actions = ()  # the system prompt's templates say how to act
        if self.config.format == "compact":
            actions = prompts.listed_actions(actions, self.config.list_actions)
        first = ep.first_observation if (self.config.show_first_observation and ep.turns) else ""
        return prompts.TurnView(goal=ep.goal, observation=obs, history=hist,
                                experience=ep.experience, valid_actions=actions,
                                first_observation=first)

