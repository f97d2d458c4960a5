"""MiniHack episodes and the machine's clock (env.seeded_clock).

NetHack's luck and monsters follow the wall clock (moon phase, night, the
midnight hour). The clock test runs the expert on one eval seed under a
faked clock (an LD_PRELOAD shim over time() and gettimeofday(), built with
the system C compiler; skipped without one): with NLE's clock the game at
00:30 differs from the game at 14:30, with the seeded clock it does not.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("nle")
pytest.importorskip("minihack")

from crl_jax.envs.minihack_env import MiniHackEnv
from crl_jax.training.tasks import task_source

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# 2026-11-30 00:30 and 14:30 UTC; the first is in NetHack's midnight hour
MIDNIGHT, AFTERNOON = 1795998600, 1796049000
SEED = 1_000_012  # an eval seed whose expert game differs between the two hours

SHIM = r"""
#include <stdlib.h>
#include <time.h>
#include <sys/time.h>
static time_t fake(void) { return (time_t)atoll(getenv("FAKE_TIME")); }
time_t time(time_t *t) { time_t v = fake(); if (t) *t = v; return v; }
int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz; if (tv) { tv->tv_sec = fake(); tv->tv_usec = 0; } return 0; }
"""

PLAY = r"""
import ctypes, json, sys
libc_now = ctypes.CDLL(None).time(None)  # what NetHack's clock calls return here
from crl_jax.envs.minihack_env import MiniHackEnv
from crl_jax.envs.minihack_expert import MiniHackExpert
env = MiniHackEnv("MiniHack-Room-Ultimate-5x5-v0", seeded_clock=sys.argv[3] == "1")
expert = MiniHackExpert()
obs, _ = env.reset(int(sys.argv[2]))
expert.reset()
trajectory = [obs]
for _ in range(40):
    step = env.step(expert.act(env))
    trajectory.append(step.observation)
    if step.done:
        break
print(json.dumps({"libc_now": libc_now, "trajectory": trajectory}))
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the clock shim")
    d = tmp_path_factory.mktemp("clock")
    (d / "shim.c").write_text(SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "shim.so"), str(d / "shim.c")],
                   check=True, capture_output=True)
    return str(d / "shim.so")


def _play_at(shim, when: int, seeded: bool) -> list[str]:
    env = dict(os.environ, FAKE_TIME=str(when), LD_PRELOAD=shim, TZ="UTC")
    out = subprocess.run([sys.executable, "-c", PLAY, REPO, str(SEED), "1" if seeded else "0"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["libc_now"] == when  # the shim is in place: the game reads the faked clock
    return got["trajectory"]


def test_nle_clock_changes_the_game_and_the_seeded_clock_does_not(shim):
    assert _play_at(shim, MIDNIGHT, False) != _play_at(shim, AFTERNOON, False)
    assert _play_at(shim, MIDNIGHT, True) == _play_at(shim, AFTERNOON, True)


def test_seeded_clock_takes_moon_phase_from_the_seed():
    # With the seeded clock the start-of-game moon message is a function of
    # the seed, whatever the date: over 40 seeds some games open under a full
    # or new moon, and replaying a seed gives the same opening.
    env = MiniHackEnv("MiniHack-Room-Ultimate-5x5-v0", seeded_clock=True)
    openings = {s: env.reset(s)[0] for s in range(40)}
    moons = [s for s, o in openings.items() if "moon tonight" in o]
    assert moons and len(moons) < 40
    assert all("moon tonight" in env.reset(s)[0] for s in moons)
    env.close()


def test_task_sources_pass_the_setting_to_minihack_only():
    src = task_source("MiniHack-Room-Ultimate-5x5-v0", "eval", 0, 0, 20, num_tasks=2,
                      seeded_clock=True)
    env, ref = src.make(), MiniHackEnv("MiniHack-Room-Ultimate-5x5-v0", seeded_clock=True)
    # the seeds whose opening names a moon are the seeded clock's, whatever today's moon
    assert [s for s in range(20) if "moon tonight" in env.reset(s)[0]] == \
        [s for s in range(20) if "moon tonight" in ref.reset(s)[0]] != []
    env.close(), ref.close()
    task_source("webshop", "eval", 0, 0, 20, num_tasks=2, seeded_clock=True).make()  # ignored


def test_presets_with_minihack_games_use_the_seeded_clock():
    # arms of one figure run at different hours, on different days and
    # machines: their MiniHack games must not depend on when they ran
    from experiments.configs import load_preset
    for name in ("minihack_room_cpu", "multitask3_cpu", "minihack_room", "multitask3",
                 "multitask6"):
        assert load_preset(name).env.seeded_clock, name
    for name in ("alfworld_cpu", "webshop_cpu", "alfworld"):
        assert not load_preset(name).env.seeded_clock, name  # no MiniHack: key unchanged
