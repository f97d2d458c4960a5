"""The experience extractor pi_phi: the manager's extractor callable, and its
CISPO training on the manager's buffer (paper Eq. 3 with Eq. 7 weights).

Generation keeps the sampled token ids of every reply (keyed by the reply
text), so training uses exactly the tokens that were sampled; only a reply
whose ids were evicted from that cache is re-encoded (counted in `stats`, which
the trainer logs as extractor/... metrics).
"""
from __future__ import annotations

import collections
import dataclasses
import json
import threading

import numpy as np

from crl_jax.rl import prompts
from crl_jax.rl.advantages import extractor_advantages
from crl_jax.experience import ExtractionRequest, ExtractorReply, TrainingItem
from crl_jax.experience.operations import shown_text
from crl_jax.rl.batch import Sample, pack_samples
from crl_jax.rl.learner import Learner
from models.sampler import Sampler
from models.sampling_ops import SamplingConfig, strip_stop_tokens


def request_view(request: ExtractionRequest) -> prompts.ExtractorView:
    """What the extractor is shown of a request: its entries as readers see
    them (operations.shown_text)."""
    return prompts.ExtractorView(request.goal, request.trajectory, request.success,
                                 tuple(shown_text(e.text) for e in request.shown_entries),
                                 request.query, request.kind, request.room)


class ExtractorAgent:
    def __init__(self, learner: Learner, tokenizer, fmt: str = "compact", max_new_tokens: int = 96,
                 temperature: float = 1.0, seed: int = 0, cache_size: int = 4096,
                 frozen: bool = False, top_p: float = 1.0, max_prompt_tokens: int = 1024):
        self.learner, self.tokenizer, self.fmt = learner, tokenizer, fmt
        self.max_prompt_tokens = max_prompt_tokens
        self.frozen = frozen  # offline / static-online baselines: never trained
        self.sampler = Sampler(learner.model, pad_id=tokenizer.pad_id)
        stops = tuple(sorted(set(getattr(tokenizer, "eos_ids", ()) or ()) | {tokenizer.eos_id}))
        self.sampling = SamplingConfig(temperature=temperature, top_p=top_p,
                                       max_new_tokens=max_new_tokens,
                                       stop_token_ids=stops, check_every=max_new_tokens)
        # A merge answer restates several entries: give it room.
        self.merge_sampling = SamplingConfig(temperature=temperature, top_p=top_p,
                                             max_new_tokens=4 * max_new_tokens,
                                             stop_token_ids=stops, check_every=max_new_tokens)
        self._ids: collections.OrderedDict = collections.OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._calls = 0
        self._seed = seed
        self.stats = collections.Counter()

    def _render(self, request: ExtractionRequest) -> tuple[str, list[int]]:
        view = request_view(request)
        if self.fmt == "compact":
            text = prompts.render_extractor_compact(view)
        else:
            text = self.tokenizer.apply_chat_template(prompts.render_extractor_chat_messages(view))
        return text, self.tokenizer.encode(text)[-self.max_prompt_tokens:]

    def __call__(self, request: ExtractionRequest) -> ExtractorReply:
        text, ids = self._render(request)
        with self._lock:
            self._calls += 1
            if self.fmt == "compact" and request.trajectory:
                # the trajectory did not fit and its end was cut (prompts.EXTRACTOR_TRAJ_CHARS)
                self.stats["trajectories_clipped"] += (
                    len(" ".join(request.trajectory.split())) > prompts.EXTRACTOR_TRAJ_CHARS)
            seed = self._seed * 1_000_003 + self._calls
        result = self.sampler.generate([ids], self.sampling, rng=seed)
        out = result.tokens[0]
        response = self.tokenizer.decode(strip_stop_tokens(out, self.sampling))
        with self._lock:
            self._ids[(text, response)] = (ids, out)
            while len(self._ids) > self._cache_size:
                self._ids.popitem(last=False)
        self.stats["generated_tokens"] += len(out)
        # No stop token within the cap: the answer was cut (and is most
        # likely malformed); a cap too short for the answers shows here.
        self.stats["answers_at_cap"] += (len(out) >= self.sampling.max_new_tokens and
                                         len(strip_stop_tokens(out, self.sampling)) == len(out))
        return ExtractorReply(text, response)

    def greedy_answers(self, requests: list[ExtractionRequest], batch: int = 16) -> list[str]:
        """Greedy replies to ``requests`` (a measurement: no call is counted,
        nothing is kept for training, the sampling seeds are untouched)."""
        greedy = dataclasses.replace(self.sampling, temperature=0.0)
        out = []
        for i in range(0, len(requests), batch):
            ids = [self._render(r)[1] for r in requests[i:i + batch]]
            result = self.sampler.generate(ids, greedy, rng=0)
            out += [self.tokenizer.decode(strip_stop_tokens(t, greedy)) for t in result.tokens]
        return out

    def merge(self, texts: list[str]) -> list[str] | None:
        """The manager's merger: the extractor decides which entries of a window
        to keep or merge (paper: periodic merge). None (malformed answer) makes
        the manager keep the window unchanged."""
        rendered = prompts.render_merge(texts, self.fmt)
        if self.fmt != "compact":
            rendered = self.tokenizer.apply_chat_template(rendered)
        ids = self.tokenizer.encode(rendered)[-4096:]
        with self._lock:
            self._calls += 1
            seed = self._seed * 1_000_003 + self._calls
        out = self.sampler.generate([ids], self.merge_sampling, rng=seed).tokens[0]
        self.stats["merge_calls"] += 1
        return prompts.parse_merge(self.tokenizer.decode(strip_stop_tokens(out, self.sampling)))

    def state_dict(self) -> dict:
        """The call count that seeds each reply's sampling (checkpointed, so a
        resumed run samples as the uninterrupted one would), and the running
        totals of ``stats`` (so its metrics continue)."""
        with self._lock:
            return {"calls": self._calls, "stats": dict(self.stats)}

    def load_state_dict(self, state: dict) -> None:
        with self._lock:
            self._calls = int(state["calls"])
            self.stats = collections.Counter({k: int(v) for k, v in
                                              state.get("stats", {}).items()})

    def save_sampled_ids(self, path: str, keyed_pairs: dict) -> None:
        """The sampled token ids of the replies ``keyed_pairs`` names
        ({sample key: (prompt, response)}), as JSON at ``path``: a resumed
        run trains on the tokens that were sampled, as an uninterrupted one
        does, not on a re-encoding of their text."""
        with self._lock:
            out = {key: [list(map(int, ids[0])), list(map(int, ids[1]))]
                   for key, pair in keyed_pairs.items() if (ids := self._ids.get(tuple(pair)))}
        with open(path, "w") as f:
            json.dump(out, f)

    def load_sampled_ids(self, path: str, keyed_pairs: dict) -> None:
        with open(path) as f:
            saved = json.load(f)
        with self._lock:
            for key, (p_ids, r_ids) in saved.items():
                if key in keyed_pairs:
                    self._ids[tuple(keyed_pairs[key])] = (p_ids, r_ids)

    def _sample(self, item: TrainingItem, advantage: float) -> Sample:
        with self._lock:
            ids = self._ids.get((item.prompt, item.response))
        if ids is None:
            self.stats["reencoded"] += 1
            ids = (self.tokenizer.encode(item.prompt),
                   self.tokenizer.encode(item.response) + [self.tokenizer.eos_id])
        p, r = ids
        return Sample(list(p) + list(r), [0] * len(p) + [1] * len(r), None, advantage)

    def train_step(self, items: list[TrainingItem]) -> dict[str, float]:
        """One CISPO update on a buffer batch; old log-probs are recomputed with
        the current parameters (one update per batch: rho = 1 up to numerics)."""
        if self.frozen:
            raise RuntimeError("this extractor is frozen (a fixed-extractor baseline)")
        adv = extractor_advantages([i.reward for i in items], [i.weight for i in items])
        samples = [self._sample(item, a) for item, a in zip(items, adv)]
        packed = pack_samples(samples, self.tokenizer.pad_id, self.learner.optim.micro_batch)
        packed.old_logprobs[:] = np.where(packed.loss_mask > 0, self.learner.logprobs(packed), 0.0)
        metrics = self.learner.policy_step(packed)
        self.sampler.update_params(self.learner.model)
        metrics.update(reward_mean=float(np.mean([i.reward for i in items])),
                       weight_mean=float(np.mean([i.weight for i in items])),
                       batch=len(items))
        return metrics
