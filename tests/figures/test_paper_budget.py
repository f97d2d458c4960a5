"""reproduce.py --budget=paper: each paper figure's arms on the checkpoint
presets, the studies of the CPU testbed left out, and several jobs on one
host kept from taking each other's GPU memory."""
import os
import subprocess

import pytest

from crl_jax.training.cost_model import device_hours
from experiments.figures import common, reproduce, settings, sweep
from experiments.figures.common import Arm


@pytest.fixture
def paper_profile():
    yield settings.set_paper_profile
    settings.set_paper_profile("released")


def test_paper_arms_run_the_checkpoint_presets_without_cpu_switches(paper_profile):
    mods = list(reproduce.arms_by_module(reproduce.modules([]), "paper", log=lambda _: None))
    names = {m.__name__.rsplit(".", 1)[-1] for m in mods}
    assert names == set(reproduce.PAPER_FIGURES)  # no study of the CPU testbed
    arms = reproduce.collect_arms(mods, "paper")
    assert {a.preset for a in arms} <= set(settings.PAPER_PRESETS.values())
    assert {"alfworld", "minihack_room", "webshop", "multitask3"} <= {a.preset for a in arms}
    for arm in arms:
        cfg = common.arm_config(arm)  # every arm resolves: no switch the preset rejects
        assert cfg.actor.checkpoint and arm.seed == 0
        assert not any(o.startswith("warm_start.") for o in arm.overrides)
        assert not any(o.startswith("extractor.hidden_size") for o in arm.overrides)
        assert arm.est_s == pytest.approx(device_hours(cfg)["total"] * 3600)  # not CPU minutes
    grpo = [a for a in arms if "experience.mode=none" in a.overrides]
    assert grpo and all("experience.actor_critic=false" in a.overrides for a in grpo)
    paper_profile("paper")
    assert all(a.preset.endswith(":paper") for a in reproduce.collect_arms(mods, "paper"))


def test_cpu_only_variants_and_presets_have_no_paper_arms():
    from experiments.figures import fig9
    labels = {a.label for a in fig9.arms("paper")}
    assert "Comp. RL + larger extractor" not in labels and "Comp. RL" in labels
    with pytest.raises(settings.NoPaperPreset, match="alfworld_households_cpu has no paper"):
        settings.make_arm("x", "alfworld_households_cpu", "paper")
    # at the CPU budgets nothing changes: the same arm as before
    assert settings.make_arm("x", "alfworld_cpu", "full", mode="none").overrides == (
        "experience.mode=none",)


def test_several_jobs_on_one_gpu_host_share_its_memory():
    none = lambda: []  # noqa: E731
    assert sweep.job_environment(2, "full", {}, none) == {}
    assert sweep.job_environment(1, "paper", {}, none) == {}
    assert sweep.job_environment(2, "paper", {}, none) == {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.450"}
    assert sweep.job_environment(3, "paper", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, none) == {}
    with pytest.raises(ValueError, match="TPU host"):
        sweep.job_environment(2, "paper", {}, lambda: ["/dev/accel0"])


def test_run_arm_gives_its_process_the_jobs_environment(tmp_path):
    seen = []

    def runner(cmd, **kw):
        seen.append(kw["env"])
        return subprocess.CompletedProcess(cmd, 1)
    arm = Arm("a", "alfworld_cpu", ("experience.mode=none",))
    common.run_arm(arm, str(tmp_path), runner=runner, env_extra={"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.3"})
    assert seen[0]["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.3" and seen[0]["PYTHONUNBUFFERED"] == "1"


def _hours_table(profile: str) -> dict[str, tuple[str, str]]:
    settings.set_paper_profile(profile)
    try:
        by_module = reproduce.arms_by_module(reproduce.modules([]), "paper", log=lambda _: None)
        arms = reproduce.collect_arms(list(by_module), "paper")
        rows = {name: (str(runs), f"{hours:,.0f}")
                for name, (runs, hours) in reproduce.figure_hours(by_module, arms).items()}
        rows["all (distinct runs)"] = (str(len(arms)), f"{sum(a.est_s for a in arms) / 3600:,.0f}")
        return rows
    finally:
        settings.set_paper_profile("released")


def test_build_md_states_each_figures_hours_as_the_dry_run_computes_them():
    with open(os.path.join(common.REPO, "BUILD.md"), encoding="utf-8") as f:
        text = f.read().split("<!-- paper-figures: hours -->", 1)[1]
    table = {}
    for line in text.strip().splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = (tuple(cells[1:3]), tuple(cells[3:5]))
    released, paper = _hours_table("released"), _hours_table("paper")
    assert set(table) == set(released) == set(paper)
    for name, (want_released, want_paper) in table.items():
        assert (released[name], paper[name]) == (want_released, want_paper), name
