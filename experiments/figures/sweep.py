"""Running many arms: one after another, or several at once (``jobs``).

Arms of one preset share a warm start through the sweep's warm-start cache
(crl_jax/training/warm_cache.py). With several jobs, an arm waits while another arm
is training weights it needs from the cache (two processes would both train
them, and the second would overwrite the first's with other weights), and
starts once they are stored; an arm that needs the extractor too starts as
soon as a baseline arm (actor only) has stored the actor, and trains the
extractor itself. An actor is known by what it is trained from
(``actor_identity``), not by its entry: arms whose warm starts differ only in
how the extractor is taught wait for one actor, and adopt it. Arms whose
weights are cached, or that are the first to need them, run as soon as a
job is free. An arm marked ``alone`` (it
measures time) runs with nothing beside it. Arms already finished are
skipped before anything starts: a finished timing arm must not hold the
queue behind an hour-long run.
"""
from __future__ import annotations

import concurrent.futures as cf
import glob
import os
import time
from typing import Callable, Sequence

from experiments.figures.common import (Arm, ArmResult, arm_config, dedupe_arms, run_arm,
                                        skip_if_finished)


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


# What JAX reads to size its GPU memory pool: a user who set either keeps it.
_POOL_VARIABLES = ("XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_PREALLOCATE",
                   "XLA_PYTHON_CLIENT_ALLOCATOR")


def job_environment(jobs: int, budget: str, environ=os.environ,
                    tpu_devices: Callable[[], list] = lambda: glob.glob("/dev/accel*")
                    ) -> dict[str, str]:
    """Variables for each arm's process when ``jobs`` arms share one host.
    On CPU (the quick and full budgets) none. At the paper budget JAX would
    preallocate 75% of every GPU in each job, and the second job would find
    no memory: each job takes 0.9 / jobs of it (XLA_PYTHON_CLIENT_MEM_FRACTION)
    unless the caller set JAX's pool variables. A TPU host's chips belong to
    one process, so more than one job there is an error."""
    if budget != "paper" or jobs == 1:
        return {}
    if tpu_devices():
        raise ValueError(f"--jobs={jobs} on a TPU host: its chips belong to one process; "
                         "run --jobs=1")
    if any(v in environ for v in _POOL_VARIABLES):
        return {}
    return {"XLA_PYTHON_CLIENT_MEM_FRACTION": f"{0.9 / jobs:.3f}"}


def warm_start_need(arm: Arm) -> tuple[str, tuple[str, ...]]:
    """(warm-start cache key, the weights the arm needs from it): an arm
    whose mode has no extractor (none, oracle) needs only the actor, so it
    neither waits for an extractor nor holds back one that builds it."""
    from crl_jax.training.warm_cache import warm_start_key
    cfg = arm_config(arm)
    names = ("actor", "extractor") if cfg.experience.has_extractor else ("actor",)
    return warm_start_key(cfg), names


def actor_identity(arm: Arm) -> str:
    """What the arm's warm-started actor is trained from (warm_actors.
    actor_inputs_key): arms whose warm starts differ only in how the
    extractor is taught share one actor, whichever entry stores it first."""
    from crl_jax.training.warm_actors import actor_inputs_key
    return actor_inputs_key(arm_config(arm))


def warm_cached(cache_dir: str, key: str, names: Sequence[str]) -> bool:
    from crl_jax.training.warm_cache import WEIGHTS_SUFFIX

    return all(os.path.exists(os.path.join(cache_dir, key, f"{n}{WEIGHTS_SUFFIX}")) for n in names)


class _Progress:
    """Progress lines with an ETA that scales the remaining arms' estimates by
    how the finished ones compared with theirs (their mean wall time when
    arms carry no estimate), divided by the number of jobs."""

    def __init__(self, arms: Sequence[Arm], jobs: int, log: Callable[[str], None]):
        self.arms, self.jobs, self.log = arms, jobs, log
        self.t0 = time.perf_counter()
        self.spent = self.estimated = 0.0
        self.ran = self.done = 0

    def started(self, i: int, arm: Arm) -> None:
        self.log(f"[{i}/{len(self.arms)}] {arm.label} | {arm.preset} seed={arm.seed} -> "
                 f"{arm.run_name}")

    def finished(self, i: int, res: ArmResult, rest: Sequence[Arm]) -> None:
        self.done += 1
        if res.status != "skipped":
            self.ran += 1
            self.spent += res.wall_s
            self.estimated += res.arm.est_s
        if self.estimated > 0:
            eta = sum(a.est_s for a in rest) * self.spent / self.estimated
        else:
            eta = len(rest) * (self.spent / self.ran if self.ran else 0.0)
        self.log(f"[{i}/{len(self.arms)}] {res.status} in {_fmt(res.wall_s)} "
                 f"(rc={res.returncode}) | {self.done}/{len(self.arms)} finished | elapsed "
                 f"{_fmt(time.perf_counter() - self.t0)} | ETA {_fmt(eta / self.jobs)}")


def run_arms(arms: Sequence[Arm], root: str, timeout_s: float | None = None,
             log: Callable[[str], None] = print, jobs: int = 1,
             warm_cache: str | None = None, poll_s: float = 15.0, **kw) -> list[ArmResult]:
    """Runs the (deduplicated) arms, ``jobs`` at a time, printing progress;
    returns their results in the arms' order. An arm waiting for a warm start
    starts once the cache holds it (checked every ``poll_s``), not when the
    arm that builds it ends."""
    if jobs < 1:
        raise ValueError(f"jobs={jobs} must be at least 1")
    arms = dedupe_arms(arms)
    progress = _Progress(arms, jobs, log)
    if jobs == 1:
        results = []
        for i, arm in enumerate(arms, 1):
            progress.started(i, arm)
            results.append(run_arm(arm, root, timeout_s, warm_cache=warm_cache, **kw))
            progress.finished(i, results[-1], arms[i:])
        return results
    cache = warm_cache if warm_cache is not None else os.path.join(
        os.path.abspath(root), "warm_start_cache")
    from crl_jax.training.warm_actors import entry_with_actor
    needs = {arm.key: warm_start_need(arm) for arm in arms}
    actors = {arm.key: actor_identity(arm) for arm in arms}
    pending = list(enumerate(arms, 1))
    running: dict[cf.Future, tuple[int, Arm]] = {}
    # Weights running arms are training, each as (name, what names it): an
    # actor by what it is trained from, an extractor by its entry.
    building: set[tuple[str, str]] = set()
    claimed: dict[int, set[tuple[str, str]]] = {}  # arm index -> the weights it builds
    results: dict[int, ArmResult] = {}
    for item in list(pending):
        i, arm = item
        skipped = skip_if_finished(arm, root, log)
        if skipped:
            pending.remove(item)
            progress.started(i, arm)
            results[i] = skipped
            progress.finished(i, skipped, [a for _, a in pending])
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending or running:
            waiting = False  # an arm waits for a warm start that a running arm is building
            # One look at the cache per pass: a file landing mid-pass must not
            # let a later arm take the slot the earlier arm was waiting for.
            seen: dict[tuple[str, str], bool] = {}
            adoptable: dict[str, bool] = {}  # actor identity -> another entry holds it

            def cached(key: str, name: str) -> bool:
                if (key, name) not in seen:
                    seen[key, name] = warm_cached(cache, key, (name,))
                return seen[key, name]

            def stored(key: str, name: str, actor: str) -> bool:  # an actor elsewhere is adopted
                if name != "actor" or cached(key, name):
                    return cached(key, name)
                if actor not in adoptable:
                    adoptable[actor] = entry_with_actor(cache, actor) is not None
                return adoptable[actor]

            for item in list(pending):
                i, arm = item
                if len(running) >= jobs or any(a.alone for _, a in running.values()):
                    break
                if arm.alone and running:
                    break  # let the running arms drain, then time this one by itself
                key, names = needs[arm.key]
                actor = actors[arm.key]
                missing = set() if not cache else {
                    (n, actor if n == "actor" else key) for n in names
                    if not stored(key, n, actor)}
                if missing & building:
                    waiting = True
                    continue  # wait for the arm that is building these weights
                # e.g. the baseline built the actor: this arm trains the extractor
                building |= missing
                claimed[i] = missing
                pending.remove(item)
                progress.started(i, arm)
                running[pool.submit(run_arm, arm, root, timeout_s, warm_cache=cache, **kw)] = item
            done, _ = cf.wait(running, timeout=poll_s if waiting else None,
                              return_when=cf.FIRST_COMPLETED)
            for fut in done:
                i, arm = running.pop(fut)
                building -= claimed.pop(i)
                results[i] = fut.result()
                progress.finished(i, results[i], [a for _, a in pending])
    return [results[i] for i in sorted(results)]
