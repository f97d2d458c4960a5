"""EnvPool: equal to serial runs, turn cap, and no hang when a worker dies."""
import os
import signal

import numpy as np
import pytest

from crl_jax.envs import registry
from crl_jax.envs.pool import EnvPool, WorkerError
from crl_jax.envs.sokoban import SokobanEnv


def random_actions(n_envs, n_steps, seed):
    rng = np.random.default_rng(seed)
    vocab = ["up", "down", "left", "right", "jump"]
    return [[vocab[i] for i in rng.integers(len(vocab), size=n_envs)] for _ in range(n_steps)]


def serial_run(name, seeds, action_rows, max_turns, **kwargs):
    out = []
    for slot, seed in enumerate(seeds):
        env = registry.make_env(name, **kwargs)
        traj = [env.reset(seed)[0]]
        for turn, row in enumerate(action_rows):
            res = env.step(row[slot])
            traj.append((res.observation, res.reward))
            if res.done or turn + 1 >= max_turns:
                break
        env.close()
        out.append(traj)
    return out


def pool_run(pool, seeds, action_rows):
    obs, _ = pool.reset(seeds)
    trajs = [[o] for o in obs]
    for row in action_rows:
        acts = [a if not d else None for a, d in zip(row, pool.done)]
        if all(a is None for a in acts):
            break
        for slot, res in enumerate(pool.step(acts)):
            if res is not None:
                trajs[slot].append((res.observation, res.reward))
    return trajs


def test_pool_equals_serial_and_ignores_worker_count():
    seeds = [10, 11, 12, 13, 14]
    rows = random_actions(len(seeds), 25, seed=0)
    expect = serial_run("sokoban", seeds, rows, max_turns=12)
    for workers in (1, 2):
        with EnvPool("sokoban", num_envs=len(seeds), num_workers=workers,
                     max_turns=12) as pool:
            assert pool_run(pool, seeds, rows) == expect


def test_turn_cap_and_expert_in_workers():
    with EnvPool("sokoban", num_envs=3, num_workers=2, max_turns=3,
                 with_expert=True) as pool:
        pool.reset([0, 1, 2])
        for turn in range(3):
            results = pool.step(["jump"] * 3)
        assert all(r.done and r.info.extra["truncated"] for r in results)
        with pytest.raises(ValueError, match="finished"):
            pool.step(["up"] * 3)
        # expert actions computed in the workers solve the levels
        pool.reset([0, 1, 2])
        pool.max_turns = 50
        wins = [False] * 3
        while not all(pool.done):
            for i, r in enumerate(pool.step(pool.expert_actions())):
                if r is not None and r.done:
                    wins[i] = r.info.won
        assert wins == [True] * 3
        with pytest.raises(ValueError, match="one entry"):
            pool.reset([0])


def test_minihack_pool_equals_serial():
    pytest.importorskip("minihack")
    name = "MiniHack-Room-Ultimate-5x5-v0"
    seeds = [1, 2, 3, 4]
    rng = np.random.default_rng(1)
    names = ["north", "east", "south", "west", "northeast", "southeast", "southwest",
             "northwest", "dance"]
    rows = [[names[i] for i in rng.integers(len(names), size=4)] for _ in range(15)]
    expect = serial_run(name, seeds, rows, max_turns=10)
    with EnvPool(name, num_envs=4, num_workers=2, max_turns=10) as pool:
        assert pool_run(pool, seeds, rows) == expect


def test_dead_worker_raises_instead_of_hanging():
    pool = EnvPool("sokoban", num_envs=2, num_workers=2, timeout_s=30)
    pool.reset([0, 1])
    os.kill(pool._procs[1].pid, signal.SIGKILL)
    pool._procs[1].join(5)
    with pytest.raises(WorkerError, match="worker 1"):
        pool.step(["up", "up"])
    with pytest.raises(WorkerError, match="closed"):
        pool.step(["up", "up"])
    pool.close()


def test_worker_exception_is_reported():
    with EnvPool("sokoban", num_envs=1, num_workers=1) as pool:
        with pytest.raises(WorkerError, match="Sokoban task must be"):
            pool.reset(["not-a-seed"])
    with pytest.raises(WorkerError, match="unknown environment"):
        EnvPool("no-such-env", num_envs=1, num_workers=1)


def test_registry():
    assert isinstance(registry.make_env("sokoban"), SokobanEnv)
    names = registry.env_names()
    for n in ("MiniHack-Room-Ultimate-5x5-v0", "MiniHack-MazeWalk-9x9-v0",
              "MiniHack-KeyRoom-Dark-S5-v0", "MiniHack-River-Narrow-v0", "webshop",
              "sokoban", "alfworld", "alfworld_real"):
        assert n in names
    with pytest.raises(ValueError, match="unknown environment"):
        registry.make_env("chess")
    with pytest.raises(ValueError, match="fixed by the name"):
        registry.make_env("MiniHack-Room-5x5-v0", env_id="x")
    assert type(registry.make_expert("webshop")).__name__ == "WebShopExpert"
