"""The extractor's training buffer: samples keyed by the extractor call that produced them.

A sample is one extractor exchange (prompt, response): a consolidation call
that produced entries, or a search-and-ask rewrite. Its reward r(m) is the
mean over the trajectories its entries guided of +1 (success) / -1 (failure).
Batches are drawn when `batch_size` samples have a reward; each drawn sample
gets the count-aware weight of Eq. 7, computed at draw time.

A merged entry written by a rule (experience.bank.merge_credit=sources) is
no extractor exchange: its key is a credit *group* whose outcomes go to the
samples whose entries the merge folded into it (``share_credit``).
"""
from __future__ import annotations

import collections
import dataclasses
import threading

from crl_jax.experience.reweighting import count_aware_weight


@dataclasses.dataclass
class ExtractorSample:
    key: str
    prompt: str
    response: str
    kind: str  # "consolidate" or "ask"
    created_step: int
    entry_ids: tuple[int, ...] = ()
    outcomes: list = dataclasses.field(default_factory=list)
    train_count: int = 0
    last_trained_step: int | None = None

    @property
    def reward(self) -> float:
        """Paper Eq. 3's r(m): the mean +1 / -1 outcome of the trajectories
        this sample's entries guided (each less its baseline, when the run
        measures outcomes against free episodes: EpisodeRecord.outcome_baseline)."""
        return sum(self.outcomes) / len(self.outcomes)


def outcome(success: bool, baseline: float = 0.0) -> float:
    """One trajectory's contribution to r(m) (paper Eq. 3): +1 / -1, less its baseline."""
    return (1.0 if success else -1.0) - float(baseline)


@dataclasses.dataclass(frozen=True)
class TrainingItem:
    key: str
    prompt: str
    response: str
    reward: float  # r(m)
    weight: float  # w(m), Eq. 7
    train_count: int  # c_train(m) before this draw
    entry_ids: tuple[int, ...]


class ExtractorTrainingBuffer:
    """Thread-safe (consolidation adds, the trainer draws); not on the read path."""

    def __init__(self, batch_size: int = 64, cooldown_delta: int = 1, alpha: float = 0.5,
                 max_samples: int = 8192):
        if batch_size < 1 or max_samples < batch_size:
            raise ValueError(f"need 1 <= batch_size <= max_samples, got {batch_size}, {max_samples}")
        self.batch_size, self.cooldown_delta, self.alpha = batch_size, cooldown_delta, alpha
        self.max_samples = max_samples
        self._samples: collections.OrderedDict[str, ExtractorSample] = collections.OrderedDict()
        self._groups: collections.OrderedDict[str, tuple[str, ...]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._samples)

    def add_sample(self, key: str, prompt: str, response: str, step: int, kind: str = "consolidate",
                   entry_ids=()) -> None:
        with self._lock:
            if key in self._samples:
                raise ValueError(f"duplicate extractor sample key {key!r}")
            self._samples[key] = ExtractorSample(key, prompt, response, kind, step, tuple(entry_ids))
            while len(self._samples) > self.max_samples:  # oldest first
                self._samples.popitem(last=False)

    def credit(self, key: str | None, success: bool, baseline: float = 0.0) -> bool:
        """Record the outcome (+1 / -1, minus ``baseline``) of a trajectory
        guided by this sample's output. False if unknown."""
        return self.credit_value(key, outcome(success, baseline))

    def credit_value(self, key: str | None, value: float) -> bool:
        """Record one credit of this sample's output as it is (the Actor-Critic
        variant's, which the actor's verdict sets); a group's key credits each
        of its samples still held. False if it reaches none."""
        with self._lock:
            keys = self._groups.get(key, (key,)) if key is not None else ()
            samples = [s for s in (self._samples.get(k) for k in keys) if s is not None]
            for sample in samples:
                sample.outcomes.append(float(value))
            return bool(samples)

    def share_credit(self, key: str, members) -> None:
        """Make ``key`` a credit group: a trajectory guided by the entry it
        keys credits each of ``members`` (samples' keys) still held. At most
        ``max_samples`` groups are kept, oldest dropped first."""
        with self._lock:
            if key in self._samples or key in self._groups:
                raise ValueError(f"duplicate extractor sample key {key!r}")
            self._groups[key] = tuple(dict.fromkeys(members))
            while len(self._groups) > self.max_samples:
                self._groups.popitem(last=False)

    def is_sample(self, key: str | None) -> bool:
        """Whether ``key`` is a held sample's (not a group's, nor evicted)."""
        with self._lock:
            return key in self._samples

    def sample(self, key: str) -> ExtractorSample | None:
        with self._lock:
            return self._samples.get(key)

    def ready_count(self) -> int:
        with self._lock:
            return sum(1 for s in self._samples.values() if s.outcomes)

    def ready(self) -> bool:
        return self.ready_count() >= self.batch_size

    def draw(self, step: int) -> list[TrainingItem] | None:
        """A batch of `batch_size` rewarded samples out of their Eq. 7
        cooldown, least-trained first; None if there are not enough. A sample
        in its cooldown would weigh 0: an optimiser step on it would still
        move the weights (Adam's momentum, weight decay) on no signal, so
        several updates a step use each sample at most once."""
        with self._lock:
            def ready(s) -> bool:
                last = s.last_trained_step
                return bool(s.outcomes) and (last is None or last < 0 or step - last >= self.cooldown_delta)
            eligible = [s for s in self._samples.values() if ready(s)]
            if len(eligible) < self.batch_size:
                return None
            chosen = sorted(eligible, key=lambda s: s.train_count)[:self.batch_size]  # stable: oldest first
            weights = count_aware_weight([s.train_count for s in chosen], [s.last_trained_step for s in chosen],
                                         step, self.cooldown_delta, self.alpha)
            items = [TrainingItem(s.key, s.prompt, s.response, s.reward, float(w), s.train_count, s.entry_ids)
                     for s, w in zip(chosen, weights)]
            for s in chosen:
                s.train_count += 1
                s.last_trained_step = step
            return items

    def state_dict(self) -> dict:
        """JSON-able contents, for run checkpoints."""
        with self._lock:
            return {"samples": [dataclasses.asdict(s) for s in self._samples.values()],
                    "groups": {k: list(v) for k, v in self._groups.items()}}

    def load_state_dict(self, state: dict) -> None:
        with self._lock:
            self._samples.clear()
            self._groups = collections.OrderedDict(
                (k, tuple(v)) for k, v in state.get("groups", {}).items())  # none before groups
            for raw in state["samples"]:
                raw = dict(raw, entry_ids=tuple(raw["entry_ids"]), outcomes=list(raw["outcomes"]))
                self._samples[raw["key"]] = ExtractorSample(**raw)
