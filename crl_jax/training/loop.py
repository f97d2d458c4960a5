"""The run: build it, evaluate the warm start, then RL steps with periodic
evaluation and checkpoints, metrics to metrics.jsonl and TensorBoard, and a
progress bar with an ETA.

    history = run_training(cfg, out_dir)              # a new run
    history = run_training(cfg, out_dir, resume=True)  # from its latest checkpoint
"""
from __future__ import annotations

import logging
import os
import shutil

import jax

from crl_jax.training.background import ExtractorTraining
from crl_jax.training.checkpointing import RunCheckpointer
from crl_jax.training.components import Run, build_run
from crl_jax.training.evaluation import Evaluator
from crl_jax.training.metrics import MetricsWriter
from crl_jax.training.step import RunState, train_step
from crl_jax.training.warm_stage import progress_dir
from crl_jax.training.logs import progress_bar

log = logging.getLogger(__name__)
BAR_KEYS = {"train/success": "success", "train/actions": "actions",
            "eval_no_exp/success": "eval"}


def _trees(run: Run) -> dict:
    trees = {"actor_params": run.actor.params, "actor_opt": run.actor.opt_state}
    if run.extractor is not None:
        trees.update(extractor_params=run.extractor.params,
                     extractor_opt=run.extractor.opt_state)
    return trees


def save_checkpoint(run: Run, state: RunState, ckpt: RunCheckpointer) -> None:
    """Both models, their optimiser states, the step, the generator and the
    experience pipeline at a quiescent point: queued consolidations and
    merges applied and published first, then the bank, the manager's state
    (counters, extractor buffer, retrieval generator), the extractor's call
    count and the token ids of the replies its buffer will train on."""
    host = {"step": state.step, "rng": state.rng.bit_generator.state,
            "processes": jax.process_count()}
    if run.entry_tracker is not None:
        host["entry_tracker"] = run.entry_tracker.state_dict()
    files = {}
    if run.manager is not None:
        run.manager.drain()
        files["bank"] = run.manager.bank.save
        host["manager"] = run.manager.state_dict()
        if run.agent is not None:
            host["extractor_agent"] = run.agent.state_dict()
            pairs = _buffer_pairs(host["manager"])
            files["extractor_ids"] = lambda path: run.agent.save_sampled_ids(path, pairs)
    ckpt.save(state.step, _trees(run), host, files)


def _buffer_pairs(manager_state: dict) -> dict:
    return {s["key"]: (s["prompt"], s["response"])
            for s in manager_state["training_buffer"]["samples"]}


def restore_checkpoint(run: Run, ckpt: RunCheckpointer, state: RunState) -> RunState:
    """The state at the latest checkpoint (``state`` itself if there is none)."""
    if ckpt.latest_step() is None:
        log.warning("no checkpoint in %s yet: the run starts again from step 0",
                    ckpt.directory)
        return state
    restored = ckpt.restore(targets=_trees(run))
    trees, host = restored.trees, restored.host_state
    check_process_count(host.get("processes", 1), jax.process_count())
    run.actor.params, run.actor.opt_state = trees["actor_params"], trees["actor_opt"]
    run.sampler.update_params(run.actor.model)
    if run.extractor is not None:
        run.extractor.params = trees["extractor_params"]
        run.extractor.opt_state = trees["extractor_opt"]
        run.agent.sampler.update_params(run.extractor.model)
        run.manager.bank.restore(restored.files["bank"])
        if "manager" in host:
            run.manager.load_state_dict(host["manager"])
            run.agent.load_state_dict(host["extractor_agent"])
            if "extractor_ids" in restored.files:
                run.agent.load_sampled_ids(restored.files["extractor_ids"],
                                           _buffer_pairs(host["manager"]))
        else:  # a checkpoint written before the manager's state was kept
            run.manager.training_buffer.load_state_dict(host["extractor_buffer"])
    if run.entry_tracker is not None and "entry_tracker" in host:
        run.entry_tracker.load_state_dict(host["entry_tracker"])
    state.rng.bit_generator.state = host["rng"]
    log.info("resumed from step %d", restored.step)
    return RunState(step=int(host["step"]), rng=state.rng)


def check_process_count(saved: int, now: int) -> None:
    """A run resumes with the number of processes that checkpointed it: the
    mesh, and with it the numbers the run makes, depend on it."""
    if saved != now:
        raise RuntimeError(f"this run was checkpointed by {saved} process(es) and is resumed by "
                           f"{now}: resume it with {saved} (--cpu_processes={saved} locally, or "
                           f"{saved} hosts)")


def background_metrics(run: Run, extractor: ExtractorTraining | None) -> dict:
    out = {}
    if run.manager is not None:
        out["bank/size"] = len(run.manager.bank.snapshot)
        out.update({f"manager/{k}": v for k, v in run.manager.counters.items()})
        out["extractor/buffer_ready"] = run.manager.training_buffer.ready_count()
    if run.agent is not None:  # running totals, as the manager's counters
        out.update({f"extractor/{k}": float(run.agent.stats[k])
                    for k in ("generated_tokens", "answers_at_cap", "trajectories_clipped",
                              "reencoded")})
    if extractor is not None:
        out.update(extractor.pop_metrics())
    return out


def _due(every: int, step: int, last: int) -> bool:
    return bool(every) and (step % every == 0 or step == last)


def _check(run: Run, extractor: ExtractorTraining | None) -> None:
    if extractor is not None:
        extractor.check()
    if run.manager is not None:
        run.manager.check()


def _one_step(run: Run, state: RunState, evaluate: Evaluator,
              extractor: ExtractorTraining | None) -> tuple[RunState, dict]:
    """An RL step with what follows it: evaluation when due, background and
    timing metrics."""
    _check(run, extractor)
    if extractor is not None:
        extractor.actor_step = state.step
    state, metrics = train_step(run, state)
    if extractor is not None and run.cfg.experience.sync:  # a fixed point: after consolidation
        with run.timings.time("extractor_update"):
            extractor.train_now(state.step - 1)
            run.manager.drain()
    if _due(run.cfg.train.eval_every, state.step, run.cfg.train.steps):
        with run.timings.time("eval"):
            metrics.update(evaluate(f" after step {state.step}"))
    metrics.update(background_metrics(run, extractor))
    metrics.update(run.timings.pop_all())
    return state, metrics


def _checkpoint(run: Run, state: RunState, ckpt: RunCheckpointer) -> None:
    with run.timings.time("checkpoint"):
        save_checkpoint(run, state, ckpt)
    warm = progress_dir(run.out_dir, None)
    if os.path.isdir(warm) and jax.process_index() == 0:  # the checkpoint now holds the warm-started weights
        ckpt.wait()
        shutil.rmtree(warm, ignore_errors=True)


class NoMetricsWriter:
    """The metrics writer of processes other than 0: process 0 writes the
    run's one metrics.jsonl (every process has the same metrics)."""

    def write(self, step: int, metrics: dict) -> None:
        pass

    def close(self) -> None:
        pass


def _bar_metrics(metrics: dict, shown: dict) -> dict:
    """The bar's latest values: a metric keeps its last value until it comes again."""
    shown.update({short: f"{metrics[k]:.3g}" for k, short in BAR_KEYS.items() if k in metrics})
    return shown


def run_training(cfg, out_dir: str | None = None, resume: bool = False,
                 run: Run | None = None) -> list[dict]:
    """Trains for train.steps RL steps; returns the metrics of every step
    (the step-0 evaluation first, when one ran)."""
    run = run or build_run(cfg, out_dir, resume)
    t = run.cfg.train
    ckpt = RunCheckpointer(os.path.join(run.out_dir, "checkpoints"), keep=3)
    state = RunState.fresh(t.seed)
    if resume:
        state = restore_checkpoint(run, ckpt, state)
    elif ckpt.latest_step() is not None:
        raise FileExistsError(f"{run.out_dir} already holds checkpoints: resume that run, "
                              f"or choose another run directory")
    # Rows of steps this run will redo go; from step 0 that includes the
    # warm start's evaluation (a resume before the first checkpoint).
    writer = (MetricsWriter(run.out_dir, purge_after=state.step if state.step else -1)
              if jax.process_index() == 0 else NoMetricsWriter())
    evaluate = Evaluator(run)
    extractor = (ExtractorTraining(run, state.step)
                 if run.extractor is not None and cfg.experience.trains_extractor
                 else None)
    history = []
    try:
        if extractor is not None:
            extractor.start()
        if t.eval_every and state.step == 0:
            history.append(evaluate(" of the warm start"))
            writer.write(0, history[-1])
        # Made after the step-0 evaluation, so that it does not count in the ETA.
        bar = progress_bar(t.steps, "RL", "step", initial=state.step, transient=False)
        shown = _bar_metrics(history[-1] if history else {}, {})
        while state.step < t.steps:
            state, metrics = _one_step(run, state, evaluate, extractor)
            writer.write(state.step, metrics)
            history.append(metrics)
            bar.update(1)
            bar.set_postfix(_bar_metrics(metrics, shown))
            if _due(t.checkpoint_every, state.step, t.steps):
                _checkpoint(run, state, ckpt)
        bar.close()
        _check(run, extractor)
    finally:
        ckpt.close()
        if extractor is not None:
            extractor.stop()
        evaluate.close()
        run.close()
        writer.close()
    return history
