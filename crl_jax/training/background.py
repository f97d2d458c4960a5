"""The background track's training half: a thread that trains the extractor
by CISPO whenever the experience manager's buffer has a batch (the other
half, consolidation, runs on the manager's own threads). With
experience.sync the loop makes the same updates at a fixed point of each
step instead (train_now), so a seed repeats its run.

A failure here stops the run: the loop calls `check()` every step.
"""
from __future__ import annotations

import threading

import numpy as np

from crl_jax.training.components import Run


class BackgroundFailure(RuntimeError):
    """The background track failed; the run stops."""


class ExtractorTraining:
    """At most experience.extractor_updates_per_step CISPO updates per actor
    step, from experience.extractor_train_after on. Without a cap the thread
    would re-draw cooling-down entries (Eq. 7 weight 0) in a loop."""

    def __init__(self, run: Run, actor_step: int = 0):
        self.run = run
        self.actor_step = actor_step  # set by the loop before each RL step
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._metrics: list[dict] = []
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.run.cfg.experience.sync:  # the loop calls train_now at a fixed point instead
            return
        self.thread = threading.Thread(target=self._loop, daemon=True, name="crl-extractor-train")
        self.thread.start()

    def _loop(self) -> None:
        spec = self.run.cfg.experience
        current, updates = -1, 0  # updates made during the current actor step
        try:
            while not self._stop.is_set():
                items, step = None, self.actor_step
                if step != current:
                    current, updates = step, 0
                if step >= spec.extractor_train_after and updates < spec.extractor_updates_per_step:
                    items = self.run.manager.draw_training_batch(step)
                    updates += bool(items)
                if items:
                    m = self.run.agent.train_step(items)
                    m["at_actor_step"] = self.actor_step
                    self._metrics.append(m)
                else:
                    self._stop.wait(0.05)
        except BaseException as err:  # surfaced by check() in the primary loop
            self._failure = err

    def train_now(self, step: int) -> None:
        """experience.sync: actor step ``step``'s updates (up to
        extractor_updates_per_step, each on a batch drawn now), in the
        caller's thread; the loop calls it once the step's consolidations
        are in the bank."""
        spec = self.run.cfg.experience
        if step < spec.extractor_train_after:
            return
        for _ in range(spec.extractor_updates_per_step):
            items = self.run.manager.draw_training_batch(step)
            if not items:
                return
            m = self.run.agent.train_step(items)
            m["at_actor_step"] = step
            self._metrics.append(m)

    def check(self) -> None:
        if self._failure is not None:
            raise BackgroundFailure(f"extractor training failed: {self._failure!r}") from self._failure

    def pop_metrics(self) -> dict:
        """extractor/... means over the updates made since the last call."""
        done, self._metrics = self._metrics, []
        if not done:
            return {}
        out = {"extractor/updates": len(done)}
        for k in ("loss", "reward_mean", "weight_mean", "grad_norm"):
            vals = [m[k] for m in done if k in m]
            if vals:
                out[f"extractor/{k}"] = float(np.mean(vals))
        return out

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout=timeout)
