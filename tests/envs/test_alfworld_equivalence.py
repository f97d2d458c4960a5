"""The fast engine against the real one (alfworld 0.4.2 + TextWorld).

Every step of expert, random and invalid-input sequences must give the
same feedback, the same admissible list and the same win. Kept modest for
the default suite (the real engine costs ~2 s a reset, 0.1-0.2 s a step);
experiments/diagnostics/alfworld_equivalence.py runs the large sweep.
"""
import random

import pytest

from crl_jax.envs import alfworld_data as data
from crl_jax.envs.alfworld_compare import compare_engines
from crl_jax.envs.alfworld_env import FastAlfWorldEnv, RealAlfWorldEnv, spec_for
from crl_jax.envs.alfworld_fast import FastAlfredEngine
from crl_jax.envs.alfworld_generator import generate_games
from crl_jax.envs.alfworld_real import INSTALL_HINT, real_engine_available
from crl_jax.envs.alfworld_real_process import IsolatedRealAlfredEngine, RealEngineWorker

from tests.envs.alfworld_minigame import RECORD
from tests.envs.test_alfworld_fast import INTRO, QUIRK_SCRIPT, WIN_SCRIPT

# The real engine runs in a worker process: in a full test run usearch is
# already imported, and libdownward cannot share a process with it
# (see crl_jax/envs/alfworld_real_process.py).
_WORKER = None


def RealAlfredEngine(record):
    global _WORKER
    if _WORKER is None:
        _WORKER = RealEngineWorker()
    return IsolatedRealAlfredEngine(record, _WORKER)


def teardown_module():
    if _WORKER is not None:
        _WORKER.close()


needs_real = pytest.mark.skipif(not real_engine_available(),
                                reason=f"real ALFWorld engine not installed: {INSTALL_HINT}")
needs_pack = pytest.mark.skipif(not data.pack_available("valid_unseen"),
                                reason=f"ALFWorld pack not found at {data.default_pack_dir()}: "
                                       "build one from ALFWorld's download and set "
                                       "$CRL_ALFWORLD_PACK (BUILD.md, Data)")


def _two_per_task_type(split="valid_unseen"):
    chosen = {}
    for rec in data.load_pack(split):
        chosen.setdefault(rec.task_type, []).append(rec)
    return [r for recs in chosen.values() for r in (recs[0], recs[len(recs) // 2])]


@needs_real
def test_hand_written_expectations_hold_on_the_real_engine():
    for script in (WIN_SCRIPT, QUIRK_SCRIPT):
        real = RealAlfredEngine(RECORD)
        obs, _, _ = real.reset()
        assert obs == INTRO
        for cmd, expected, won in script:
            feedback, _, is_won, _ = real.step(cmd)
            assert (feedback, is_won) == (expected, won), cmd


@needs_real
@needs_pack
def test_fast_matches_real_on_pack_games():
    rng = random.Random(0)
    records = _two_per_task_type()
    assert len(records) == 12
    steps = 0
    for rec in records:
        spec = spec_for(rec)
        result = compare_engines(rec, RealAlfredEngine(rec), FastAlfredEngine(rec, spec),
                                 steps=15, rng=rng, policy="mixed", spec=spec)
        assert result.mismatch is None, (rec.id, result.mismatch)
        steps += result.steps
    assert steps >= 100  # the comparison really ran


@needs_real
def test_fast_matches_real_on_generated_games():
    rng = random.Random(1)
    for rec in generate_games(3, seed=100):
        spec = spec_for(rec)
        result = compare_engines(rec, RealAlfredEngine(rec), FastAlfredEngine(rec, spec),
                                 steps=25, rng=rng, policy="expert", spec=spec)
        assert result.mismatch is None, (rec.id, result.mismatch)
        assert result.won, rec.id  # the expert also wins on the real engine


@needs_real
@needs_pack
def test_wrappers_report_the_same_info_and_events():
    rec = _two_per_task_type()[4]  # a clean task
    fast, real = FastAlfWorldEnv([rec]), RealAlfWorldEnv([rec])
    obs_f, info_f = fast.reset(0)
    obs_r, info_r = real.reset(0)
    assert (obs_f, info_f) == (obs_r, info_r)
    from crl_jax.envs.alfworld_expert import AlfredExpert
    expert = AlfredExpert(rec, spec_for(rec))
    expert.observe(obs_f, info_f.admissible_actions)
    for _ in range(30):
        cmd = expert.act()
        res_f, res_r = fast.step(cmd), real.step(cmd)
        assert res_f == res_r, cmd
        expert.observe(res_f.observation, res_f.info.admissible_actions, cmd)
        if res_f.done:
            break
    assert res_f.info.won
    real.close()


@pytest.mark.slow
@needs_real
@needs_pack
def test_fast_matches_real_sweep():
    rng = random.Random(2)
    records = data.load_pack("valid_seen")[::5]  # 28 games
    for rec in records:
        spec = spec_for(rec)
        result = compare_engines(rec, RealAlfredEngine(rec), FastAlfredEngine(rec, spec),
                                 steps=40, rng=rng, policy="mixed", spec=spec)
        assert result.mismatch is None, (rec.id, result.mismatch)
