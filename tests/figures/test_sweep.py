"""The parallel sweep (experiments/figures/sweep.py): each warm start built
once, arms run beside each other as soon as the weights they need are
cached, timing arms alone; with fake runners, no training. And the time
model behind the sweep's estimates."""
from __future__ import annotations

import os
import subprocess

import pytest

from experiments.figures import common, settings
from tests.figures.test_figures import rows_of, write_rows


def _out_dir(cmd) -> str:
    """The run directory a fake runner's command names."""
    return next(c.split("=", 1)[1] for c in cmd if c.startswith("--out_dir="))


def test_parallel_sweep_builds_each_warm_start_once_and_runs_others_meanwhile(tmp_path):
    """Two jobs: no warm start trained twice at once, other warm starts go ahead,
    an arm marked alone (a timing run) has nothing beside it."""
    import threading
    import time as _time
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    steps = ("train.steps=2",)
    arms = [common.Arm("comp", "alfworld_cpu", (*steps, "experience.mode=comp_rl"), 0),
            common.Arm("comp", "alfworld_cpu", (*steps, "experience.mode=comp_rl"), 1),
            common.Arm("base", "alfworld_cpu", (*steps, "experience.mode=none"), 0),
            common.Arm("comp", "minihack_room_cpu", (*steps, "experience.mode=comp_rl"), 0),
            common.Arm("timed", "alfworld_cpu", (*steps, "experience.mode=none"), 1, alone=True),
            common.Arm("base", "alfworld_cpu", (*steps, "experience.mode=none"), 2)]
    by_dir = {common.run_dir(a, root): a for a in arms}
    lock, state = threading.Lock(), {"active": 0, "peak": 0, "building": set()}
    builds, starts = [], []

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        assert f"--warm_start.cache_dir={cache}" in cmd
        arm = by_dir[out]
        key, names = sweep.warm_start_need(arm)
        with lock:
            assert not state.get("alone") and (state["active"] == 0 or not arm.alone)
            state["alone"] = arm.alone
            starts.append(arm.run_name)
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
            fresh = not sweep.warm_cached(cache, key, names)
            if fresh:
                assert key not in state["building"], "two runs trained one warm start at once"
                state["building"].add(key)
                builds.append(key)
        _time.sleep(0.15 * (1 + len(starts) % 3))  # unequal, so runs end at different times
        if fresh:
            os.makedirs(os.path.join(cache, key), exist_ok=True)
            for n in names:
                open(os.path.join(cache, key, f"{n}.safetensors"), "w").close()
            with lock:
                state["building"].discard(key)
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        with lock:
            state["active"] -= 1
            state["alone"] = False
        return subprocess.CompletedProcess(cmd, 0)

    lines = []
    results = sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lines.append)
    assert [r.arm for r in results] == arms and all(r.status == "done" for r in results)
    assert state["peak"] == 2
    assert sorted(builds) == sorted({sweep.warm_start_need(a)[0] for a in arms})  # once each
    # MiniHack's arm did not wait behind ALFWorld's second seed, which waited for the cache
    assert starts.index(arms[3].run_name) < starts.index(arms[1].run_name)
    assert sum("finished |" in line for line in lines) == 6
    again = sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lines.append)
    assert [r.status for r in again] == ["skipped"] * 6
    with pytest.raises(ValueError, match="jobs=0"):
        sweep.run_arms(arms, root, jobs=0)


def test_only_modes_with_an_extractor_need_its_warm_start():
    """The oracle and GRPO train no extractor (a run of theirs stores only
    the actor), so they must not wait for one, nor claim to build it."""
    from experiments.figures import sweep
    need = {mode: sweep.warm_start_need(common.Arm(mode, "alfworld_cpu",
                                                   (f"experience.mode={mode}",), 0))
            for mode in ("none", "oracle", "comp_rl", "static_online")}
    assert {m: names for m, (_, names) in need.items()} == {
        "none": ("actor",), "oracle": ("actor",), "comp_rl": ("actor", "extractor"),
        "static_online": ("actor", "extractor")}
    assert len({key for key, _ in need.values()}) == 1  # one warm start shared by the arms


def test_arm_waiting_for_a_warm_start_starts_once_it_is_cached(tmp_path):
    """The second seed starts as soon as the first has stored the warm start,
    while the first is still training, not when the first ends."""
    import threading
    import time as _time
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    arms = [common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), s)
            for s in (0, 1)]
    by_dir = {common.run_dir(a, root): a for a in arms}
    lock, events = threading.Lock(), []

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        arm = by_dir[out]
        key, names = sweep.warm_start_need(arm)
        with lock:
            events.append(("start", arm.seed))
        if not sweep.warm_cached(cache, key, names):
            os.makedirs(os.path.join(cache, key), exist_ok=True)
            for n in names:  # the warm start is stored early; RL takes the rest
                open(os.path.join(cache, key, f"{n}.safetensors"), "w").close()
            _time.sleep(1.5)
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        with lock:
            events.append(("end", arm.seed))
        return subprocess.CompletedProcess(cmd, 0)

    sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lambda _: None,
                   poll_s=0.05)
    assert events.index(("start", 1)) < events.index(("end", 0)), events


def test_a_finished_timing_arm_does_not_hold_the_queue_behind_a_running_arm(tmp_path):
    """A timing arm (alone) that already finished is skipped at once: the arm
    after it starts beside the long arm, not when the long arm ends."""
    import threading
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    steps = ("train.steps=2",)
    long_arm = common.Arm("long", "minihack_room_cpu", (*steps, "experience.mode=none"), 0)
    timed = common.Arm("timed", "alfworld_cpu", (*steps, "experience.mode=none"), 0, alone=True)
    after = common.Arm("after", "alfworld_cpu", (*steps, "experience.mode=none"), 1)
    write_rows(common.run_dir(timed, root), rows_of([(s, 0.5) for s in range(3)]))
    by_dir = {common.run_dir(a, root): a for a in (long_arm, timed, after)}
    after_started, ran = threading.Event(), []

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        arm = by_dir[out]
        ran.append(arm.label)
        if arm is long_arm:
            # ends by itself after 5 s, so the old queue fails here instead of hanging
            ran.append(("beside", after_started.wait(timeout=5.0)))
        else:
            after_started.set()
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        return subprocess.CompletedProcess(cmd, 0)

    results = sweep.run_arms([long_arm, timed, after], root, jobs=2, warm_cache=cache,
                             runner=runner, log=lambda _: None)
    assert [r.status for r in results] == ["done", "skipped", "done"]
    assert "timed" not in ran and ("beside", True) in ran, ran


def test_experience_arm_trains_the_extractor_beside_a_baseline_that_built_the_actor(tmp_path):
    """Baseline first (it stores the actor only): the Comp. RL arm waits for
    the actor, not for the baseline's end, and builds the extractor alone."""
    import threading
    import time as _time
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    arms = [common.Arm("base", "alfworld_cpu", ("train.steps=2", "experience.mode=none"), 0),
            common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), 0),
            common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), 1)]
    by_dir = {common.run_dir(a, root): a for a in arms}
    lock, events, built = threading.Lock(), [], []

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        arm = by_dir[out]
        key, names = sweep.warm_start_need(arm)
        with lock:
            events.append(("start", arm.label, arm.seed))
            todo = [n for n in names if not sweep.warm_cached(cache, key, (n,))]
            built.extend(todo)
        # the extractor takes longer than the actor, so the second seed's start
        # (after the baseline's end) comes well before the first seed's end
        _time.sleep(0.3 if arm.label == "base" else 0.8)
        os.makedirs(os.path.join(cache, key), exist_ok=True)
        for n in todo:
            open(os.path.join(cache, key, f"{n}.safetensors"), "w").close()
        _time.sleep(1.0)
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        with lock:
            events.append(("end", arm.label, arm.seed))
        return subprocess.CompletedProcess(cmd, 0)

    sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lambda _: None,
                   poll_s=0.05)
    assert sorted(built) == ["actor", "extractor"], built  # each trained once
    assert events.index(("start", "comp", 0)) < events.index(("end", "base", 0)), events
    # the second seed waited for the extractor, then ran beside the first
    assert events.index(("start", "comp", 1)) < events.index(("end", "comp", 0)), events


def test_arm_order_holds_when_a_warm_start_lands_in_the_middle_of_a_pass(tmp_path, monkeypatch):
    """The actor file appears between the checks for two waiting arms: the
    earlier arm still gets the free slot (one look at the cache per pass)."""
    import threading
    import time as _time
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    arms = [common.Arm("base", "alfworld_cpu", ("train.steps=2", "experience.mode=none"), 0),
            common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), 0),
            common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), 1)]
    by_dir = {common.run_dir(a, root): a for a in arms}
    actor_trained, starts = threading.Event(), []
    real_cached = sweep.warm_cached

    def cached_landing_mid_pass(cache_dir, key, names):
        if tuple(names) == ("actor",) and actor_trained.is_set() and not real_cached(
                cache_dir, key, names):
            os.makedirs(os.path.join(cache_dir, key), exist_ok=True)
            open(os.path.join(cache_dir, key, "actor.safetensors"), "w").close()
            return False  # this caller looked just before the file landed
        return real_cached(cache_dir, key, names)

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        arm = by_dir[out]
        starts.append((arm.label, arm.seed))
        if arm.label == "base":
            _time.sleep(0.2)
            actor_trained.set()
            _time.sleep(1.0)
        else:
            key, _ = sweep.warm_start_need(arm)
            os.makedirs(os.path.join(cache, key), exist_ok=True)
            open(os.path.join(cache, key, "extractor.safetensors"), "w").close()
            _time.sleep(0.3)
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(sweep, "warm_cached", cached_landing_mid_pass)
    sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lambda _: None,
                   poll_s=0.05)
    assert starts == [("base", 0), ("comp", 0), ("comp", 1)], starts


def test_time_model_scales_mixtures_by_their_measured_cost():
    from crl_jax.training.config_io import apply_overrides
    from experiments.configs import load_preset
    base = load_preset("multitask3_cpu")
    six = apply_overrides(base, ["env.names=MiniHack-Room-Ultimate-5x5-v0,webshop,alfworld,"
                                 "MiniHack-MazeWalk-9x9-v0,MiniHack-KeyRoom-Dark-S5-v0,sokoban"])
    assert settings.mixture_cost(load_preset("alfworld_cpu")) == (1.0, 1.0)
    assert settings.mixture_cost(base) == (3.5, 4.1)
    assert settings.mixture_cost(six) == (5.8, 4.4)
    four = apply_overrides(base, ["env.names=MiniHack-Room-Ultimate-5x5-v0,webshop,alfworld,sokoban"])
    assert settings.mixture_cost(four) == (5.8, 4.4)  # the next measured size up
    # by hand: 40 s start + 2 steps x 1 task x 2 rollouts x 6 games, no evaluation,
    # 0.375 s x 0.9 (multitask3_cpu) x 5.8 an episode
    small = apply_overrides(six, ["train.steps=2", "train.tasks_per_step=1",
                                  "train.group_size=2", "train.eval_every=0"])
    assert settings.rl_s(small) == pytest.approx(40 + 24 * 0.375 * 0.9 * 5.8)
    # the warm start: SFT steps x 0.6 s x 4.4 + demos x 0.06 s
    ws = small.warm_start
    sft = ws.actor_steps + ws.extractor_steps  # comp_rl trains both models
    assert small.experience.mode == "comp_rl"
    assert settings.warm_start_s(small) == pytest.approx(sft * 0.6 * 4.4 + ws.demos * 0.06)


def test_a_moved_key_leaves_a_run_its_name():
    # Run names hash each key as first spelled: the research controls moved
    # from experience.* to controls.*, and every committed record kept its name.
    new = common.Arm("x", "alfworld_cpu", ("controls.oracle_source=peer", "experience.mode=oracle"))
    old_key = ("alfworld_cpu", ("experience.mode=oracle", "experience.oracle_source=peer"), 0)
    import hashlib
    import json
    digest = hashlib.sha1(json.dumps(old_key).encode()).hexdigest()[:10]
    assert new.run_name == f"alfworld_cpu-s0-{digest}"
    assert common.Arm("y", "alfworld_cpu", ("experience.mode=oracle",)).run_name != new.run_name


def test_arms_that_teach_the_extractor_apart_wait_for_one_actor(tmp_path):
    """Two warm-start entries with one actor (only the extractor's steps
    differ): the second arm waits while the first trains the actor, then
    adopts it (as warm_actors does, by the hash the entry names) and trains
    only its extractor. The actor is trained once."""
    import threading
    import time as _time
    from crl_jax.training.warm_actors import ACTOR_INPUTS, entry_with_actor
    from experiments.figures import sweep
    root, cache = str(tmp_path / "runs"), str(tmp_path / "cache")
    arms = [common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl"), 0),
            common.Arm("comp", "alfworld_cpu", ("train.steps=2", "experience.mode=comp_rl",
                                                "warm_start.extractor_steps=7"), 0)]
    keys = [sweep.warm_start_need(a)[0] for a in arms]
    assert keys[0] != keys[1] and sweep.actor_identity(arms[0]) == sweep.actor_identity(arms[1])
    by_dir = {common.run_dir(a, root): a for a in arms}
    lock, trained = threading.Lock(), []

    def runner(cmd, **kw):
        out = _out_dir(cmd)
        arm = by_dir[out]
        key, names = sweep.warm_start_need(arm)
        actor = sweep.actor_identity(arm)
        entry = os.path.join(cache, key)
        os.makedirs(entry, exist_ok=True)
        with lock:
            adopt = entry_with_actor(cache, actor, but=key)
            todo = [n for n in names if n != "actor" or not adopt]
            trained.extend((keys.index(key), n) for n in todo)
        for n in names:
            _time.sleep(0.3 if n in todo else 0.0)
            open(os.path.join(entry, f"{n}.safetensors"), "w").close()
            if n == "actor":
                with open(os.path.join(entry, ACTOR_INPUTS), "w") as f:
                    f.write(actor + "\n")
        write_rows(out, rows_of([(s, 0.5) for s in range(3)]))
        return subprocess.CompletedProcess(cmd, 0)

    sweep.run_arms(arms, root, jobs=2, warm_cache=cache, runner=runner, log=lambda _: None,
                   poll_s=0.05)
    assert sorted(trained) == [(0, "actor"), (0, "extractor"), (1, "extractor")], trained
