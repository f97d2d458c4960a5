"""Environment speed (steps per second) and expert win rates.

    .venv/bin/python experiments/benchmarks/bench_envs.py --quick [--json out.json] [--envs=minihack,sokoban]

Each entry of BENCHES measures one environment family in this process:
  random   text steps/s with uniformly random valid actions (resets included)
  expert   steps/s and win rate of the demonstration expert
  baseline (MiniHack) raw nle/minihack steps/s without text rendering, and
           the pool: the same random episodes through EnvPool vs serially.
Ratios are measured in the same run (absolute speed swings ~2x here).
"""
from __future__ import annotations

import json
import time

import numpy as np
from absl import app, flags, logging


FLAGS = flags.FLAGS
flags.DEFINE_bool("quick", False, "small episode counts: about a minute on 2 CPU cores")
flags.DEFINE_string("json", None, "write all numbers to this JSON file")
flags.DEFINE_list("envs", None, "which entries of BENCHES to run (default: all)")

MINIHACK_TASKS = ("MiniHack-Room-Ultimate-5x5-v0", "MiniHack-MazeWalk-9x9-v0",
                  "MiniHack-KeyRoom-Dark-S5-v0", "MiniHack-River-Narrow-v0")


def _random_steps(env, n_steps: int, seed: int = 0) -> float:
    """Steps/s of random valid actions, resetting when an episode ends."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed)
    t0 = time.perf_counter()
    for i in range(n_steps):
        acts = info.admissible_actions or ("search[item]",)
        res = env.step(acts[int(rng.integers(len(acts)))])
        info = res.info
        if res.done:
            _, info = env.reset(seed + i + 1)
    return n_steps / (time.perf_counter() - t0)


def _expert_episodes(env, expert, seeds) -> dict:
    wins, steps = 0, 0
    t0 = time.perf_counter()
    for seed in seeds:
        env.reset(seed)
        expert.reset()
        while True:
            res = env.step(expert.act(env))
            steps += 1
            if res.done:
                wins += res.info.won
                break
    dt = time.perf_counter() - t0
    return {"expert_win_rate": wins / len(seeds), "expert_episodes": len(seeds),
            "expert_steps_per_s": steps / dt, "expert_steps_per_episode": steps / len(seeds)}


def _raw_minihack_steps(env_id: str, n_steps: int) -> float:
    from crl_jax.envs.minihack_env import _make_gym_env
    env = _make_gym_env(env_id, None)
    rng = np.random.default_rng(0)
    env.seed(0, 0, reseed=False)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(n_steps):
        _, _, term, trunc, _ = env.step(int(rng.integers(len(env.actions))))
        if term or trunc:
            env.reset()
    rate = n_steps / (time.perf_counter() - t0)
    env.close()
    return rate


def _pool_vs_serial(name: str, n_envs: int, n_turns: int, workers: int) -> dict:
    from crl_jax.envs import registry
    from crl_jax.envs.pool import EnvPool
    rng = np.random.default_rng(0)
    env = registry.make_env(name)
    names = env.reset(0)[1].admissible_actions
    rows = [[names[i] for i in rng.integers(len(names), size=n_envs)] for _ in range(n_turns)]
    t0 = time.perf_counter()
    steps = 0
    for slot in range(n_envs):
        env.reset(slot)
        for row in rows:
            steps += 1
            if env.step(row[slot]).done:
                break
    serial = steps / (time.perf_counter() - t0)
    with EnvPool(name, num_envs=n_envs, num_workers=workers) as pool:
        pool.reset(list(range(n_envs)))
        t0, steps = time.perf_counter(), 0
        for row in rows:
            acts = [a if not d else None for a, d in zip(row, pool.done)]
            if all(a is None for a in acts):
                break
            steps += sum(a is not None for a in acts)
            pool.step(acts)
        pooled = steps / (time.perf_counter() - t0)
    return {"serial_steps_per_s": serial, "pool_steps_per_s": pooled,
            "pool_workers": workers, "pool_envs": n_envs, "pool_over_serial": pooled / serial}


def bench_minihack(quick: bool) -> dict:
    from crl_jax.envs.minihack_env import MiniHackEnv
    from crl_jax.envs.minihack_expert import MiniHackExpert
    out = {}
    n_steps = 1000 if quick else 5000
    for task in MINIHACK_TASKS:
        env = MiniHackEnv(task)
        n_ep = (10 if "River" not in task else 4) if quick else 50
        row = {"random_steps_per_s": _random_steps(env, n_steps),
               "raw_nle_steps_per_s": _raw_minihack_steps(task, n_steps)}
        row["text_over_raw"] = row["random_steps_per_s"] / row["raw_nle_steps_per_s"]
        row.update(_expert_episodes(env, MiniHackExpert(), range(1000, 1000 + n_ep)))
        env.close()
        out[task] = row
    out["pool"] = _pool_vs_serial(MINIHACK_TASKS[0], 8 if quick else 32, 30, 2)
    return out


def bench_webshop(quick: bool) -> dict:
    from crl_jax.envs.webshop import WebShopEnv, WebShopExpert
    t0 = time.perf_counter()
    env = WebShopEnv()
    build = time.perf_counter() - t0
    row = {"catalogue_and_index_build_s": build, "products": len(env.products),
           "random_steps_per_s": _random_steps(env, 2000 if quick else 20000)}
    row.update(_expert_episodes(env, WebShopExpert(), range(1000, 1100 if quick else 2000)))
    return {"webshop": row}


def bench_sokoban(quick: bool) -> dict:
    from crl_jax.envs.sokoban import SokobanEnv, SokobanExpert
    env = SokobanEnv()
    t0 = time.perf_counter()
    n_lv = 50 if quick else 500
    for seed in range(n_lv):
        env.reset(seed)
    row = {"levels_generated_per_s": n_lv / (time.perf_counter() - t0),
           "random_steps_per_s": _random_steps(env, 2000 if quick else 20000)}
    row.update(_expert_episodes(env, SokobanExpert(), range(1000, 1100 if quick else 2000)))
    return {"sokoban": row}


def bench_alfworld(quick: bool) -> dict:
    """Fast vs real ALFWorld engine on the same games and the same commands
    (random admissible sequences recorded on the fast engine), timed step by
    step in this process; resets timed apart. Expert win rates: fast engine
    on all of valid_unseen (or generated games without the pack), real
    engine on a few games."""
    import random as _random
    from crl_jax.envs import alfworld_data
    from crl_jax.envs.alfworld_env import FastAlfWorldEnv, RealAlfWorldEnv, spec_for
    from crl_jax.envs.alfworld_expert import AlfWorldEnvExpert
    from crl_jax.envs.alfworld_fast import FastAlfredEngine
    from crl_jax.envs.alfworld_generator import generate_games
    from crl_jax.envs.alfworld_pddl import parse_problem
    from crl_jax.envs.alfworld_real import RealAlfredEngine, real_engine_available
    has_pack = alfworld_data.pack_available("valid_unseen")
    games = alfworld_data.load_pack("valid_unseen") if has_pack else generate_games(134, seed=0)
    n_games, n_steps = (3, 30) if quick else (10, 50)
    chosen = games[::len(games) // n_games][:n_games]
    rng = _random.Random(0)
    scripts = []
    for rec in chosen:  # record random admissible command sequences
        eng = FastAlfredEngine(rec, spec_for(rec))
        _, adm, _ = eng.reset()
        cmds = []
        for _ in range(n_steps):
            cmds.append(rng.choice(adm))
            _, adm, won, _ = eng.step(cmds[-1])
            if won:
                break
        scripts.append(cmds)

    def timed(make):
        reset_s, step_s, steps = 0.0, 0.0, 0
        for rec, cmds in zip(chosen, scripts):
            t0 = time.perf_counter()
            eng = make(rec)
            eng.reset()
            t1 = time.perf_counter()
            for cmd in cmds:
                eng.step(cmd)
            reset_s += t1 - t0
            step_s += time.perf_counter() - t1
            steps += len(cmds)
        return steps / step_s, reset_s / len(chosen), steps

    repeats = 20  # the fast engine is too quick to time one pass precisely
    fast_rates = [timed(lambda r: FastAlfredEngine(r, spec_for(r))) for _ in range(repeats)]
    fast_rate = float(np.median([f[0] for f in fast_rates]))
    row = {"games": "valid_unseen" if has_pack else "generated",
           "fast_steps_per_s": fast_rate,
           "fast_reset_s": float(np.median([f[1] for f in fast_rates]))}
    t0 = time.perf_counter()
    for rec in games[:50]:  # first load of a game: parsing its PDDL (cached afterwards)
        parse_problem(rec.pddl_problem)
    row["fast_parse_s"] = (time.perf_counter() - t0) / 50
    expert_env = FastAlfWorldEnv(games, max_steps=50)
    row.update(_expert_episodes(expert_env, AlfWorldEnvExpert(), range(len(games))))
    out = {"alfworld_fast": row}
    if real_engine_available():
        real_rate, real_reset, steps = timed(RealAlfredEngine)
        out["alfworld_real"] = {"real_steps_per_s": real_rate, "real_reset_s": real_reset,
                                "steps_timed": steps, "games_timed": len(chosen),
                                "fast_over_real_steps": fast_rate / real_rate,
                                "fast_over_real_reset": real_reset / row["fast_reset_s"]}
        n_real = 3 if quick else 12
        real_env = RealAlfWorldEnv(games[::len(games) // n_real][:n_real], max_steps=50)
        out["alfworld_real"].update(_expert_episodes(real_env, AlfWorldEnvExpert(), range(n_real)))
        real_env.close()
    return out


# name -> function(quick) -> {row name: {metric: value}}. Other helpers add
# their environments here (e.g. "alfworld").
BENCHES = {
    "minihack": bench_minihack,
    "webshop": bench_webshop,
    "sokoban": bench_sokoban,
    "alfworld": bench_alfworld,
}


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # nle logs every environment it builds
    names = FLAGS.envs or list(BENCHES)
    unknown = set(names) - set(BENCHES)
    if unknown:
        raise ValueError(f"unknown --envs {sorted(unknown)}; valid: {sorted(BENCHES)}")
    results = {}
    for name in names:
        results[name] = BENCHES[name](FLAGS.quick)
        for row, metrics in results[name].items():
            shown = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in metrics.items())
            print(f"{name:9s} {row}: {shown}", flush=True)
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    app.run(main)
