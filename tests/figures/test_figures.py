"""The figure machinery: aggregation against hand-computed values, arm
dedupe, skipping finished runs, an end-to-end reproduce.py on fake run
directories, and one real tiny arm through the subprocess path."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from experiments.figures import aggregate, common, reproduce, settings

REPO = common.REPO


def write_rows(directory, rows):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "metrics.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def rows_of(points, key="train/success"):
    return [{"step": s, "time": 0.0, key: v} for s, v in points]


# --------------------------------------------------------------------------- aggregation


def test_curves_over_seeds_use_common_steps_and_hand_computed_stats():
    runs = {0: rows_of([(1, 0.0), (2, 0.5), (3, 1.0)]),
            1: rows_of([(1, 0.2), (2, 0.1), (3, 0.4), (4, 0.9)]),  # step 4 only here: dropped
            2: rows_of([(3, 0.1), (1, 0.4), (2, 0.3)])}  # unsorted input
    c = aggregate.seed_curves(runs, "train/success")
    assert c["steps"] == [1, 2, 3]
    assert c["mean"] == pytest.approx([0.2, 0.3, 0.5])
    assert c["min"] == pytest.approx([0.0, 0.1, 0.1])
    assert c["max"] == pytest.approx([0.4, 0.5, 1.0])
    # population std of (0, .2, .4) = sqrt(((.2)^2 + 0 + (.2)^2) / 3)
    assert c["std"][0] == pytest.approx(math.sqrt(0.08 / 3))
    assert c["per_seed"]["2"] == pytest.approx([0.4, 0.3, 0.1])


def test_final_value_is_mean_of_last_k_points_that_carry_the_key():
    rows = rows_of([(0, 0.1), (1, 0.2), (2, 0.6), (3, 1.0)]) + [{"step": 4, "other": 1.0}]
    assert aggregate.final_value(rows, "train/success", 1) == pytest.approx(1.0)
    assert aggregate.final_value(rows, "train/success", 2) == pytest.approx(0.8)
    assert aggregate.final_value(rows, "train/success", 10) == pytest.approx(0.475)
    with pytest.raises(ValueError, match="last_k"):
        aggregate.final_value(rows, "train/success", 0)


def test_ratio_pairs_seeds_and_reports_ratio_of_means():
    num = aggregate.seed_finals({0: rows_of([(1, 0.4)]), 1: rows_of([(1, 0.6)])}, "train/success")
    den = aggregate.seed_finals({0: rows_of([(1, 0.2)]), 1: rows_of([(1, 0.6)]),
                              7: rows_of([(1, 0.1)])}, "train/success")
    assert den["mean"] == pytest.approx(0.3) and den["min"] == 0.1 and den["n"] == 3
    r = aggregate.ratio(num, den)
    assert r["ratio_of_means"] == pytest.approx(0.5 / 0.3)
    assert r["per_seed"] == {"0": pytest.approx(2.0), "1": pytest.approx(1.0)}
    assert r["mean"] == pytest.approx(1.5) and (r["min"], r["max"]) == (1.0, 2.0)
    # den has seed 7 that num lacks: quote the ratio on seeds 0 and 1, (0.4+0.6)/(0.2+0.6)
    assert r["paired_ratio_of_means"] == pytest.approx(1.25)
    from experiments.figures.script import fmt_ratio
    assert fmt_ratio(r) == "1.25x (seeds 0, 1 only, the seeds both have)"
    same = aggregate.ratio(num, num)
    assert fmt_ratio(same).startswith("1.00x (per seed 1.00")
    zero = aggregate.seed_finals({0: rows_of([(1, 0.0)])}, "train/success")
    assert math.isinf(aggregate.ratio(num, zero)["ratio_of_means"])
    assert math.isnan(aggregate.ratio(zero, zero)["ratio_of_means"])


def test_missing_key_names_the_key_and_the_keys_present():
    with pytest.raises(KeyError, match=r"eval_no_exp/success.*train/success"):
        aggregate.seed_curves({0: rows_of([(1, 0.5)])}, "eval_no_exp/success")
    with pytest.raises(ValueError, match="no runs"):
        aggregate.seed_finals({}, "train/success")


# --------------------------------------------------------------------------- arms


def test_report_lists_a_note_shared_by_panels_once():
    from experiments.figures.script import report
    rep = report("x", "X", "out", [], ["A (seed 1): no metrics", "B: n/a", "A (seed 1): no metrics"])
    assert rep["notes"] == ["A (seed 1): no metrics", "B: n/a"]


def test_report_names_the_seeds_that_ran_not_those_planned(tmp_path):
    from experiments.figures.script import report
    arms = [common.Arm("A", "alfworld_cpu", (), s) for s in (0, 1, 2)]
    write_rows(common.run_dir(arms[1], str(tmp_path)), [{"step": 1, "train/success": 0.5}])
    assert report("x", "X", "out", [], [], arms=arms, root=str(tmp_path))["seeds"] == [1]


def test_arms_dedupe_by_preset_overrides_and_seed_not_label():
    a = common.Arm("Comp. RL", "alfworld_cpu", ("train.steps=2", "experience.mode=none"), 0)
    b = common.Arm("Baseline", "alfworld_cpu", ("experience.mode=comp_rl", "train.steps=2",
                                                "experience.mode=none"), 0)  # last wins
    c = common.Arm("Baseline", "alfworld_cpu", ("experience.mode=none", "train.steps=2"), 1)
    assert a.key == b.key and a.run_name == b.run_name and a.run_name != c.run_name
    assert [x.label for x in common.dedupe_arms([a, b, c])] == ["Comp. RL", "Baseline"]
    with pytest.raises(ValueError, match="seed"):
        common.Arm("x", "alfworld_cpu", ("train.seed=3",))
    with pytest.raises(ValueError, match="key.sub=value"):
        common.Arm("x", "alfworld_cpu", ("train.steps",))


def test_each_seed_of_a_figure_has_its_own_warm_start_shared_by_its_arms():
    """A figure's seed sets warm_start.seed too: Comp. RL and the baseline of
    one seed share a warm start, the seeds do not; seed 0 carries no
    override (the presets' warm_start.seed is 0), so its records keep their names."""
    from crl_jax.training.warm_cache import warm_start_key
    comp, base = settings.comp_and_baseline("alfworld_cpu", "full", (0, 1, 2))
    assert [common.override_value(a, "warm_start.seed") for a in comp] == [None, "1", "2"]
    keys = [warm_start_key(common.arm_config(a)) for a in comp]
    assert len(set(keys)) == 3
    assert [warm_start_key(common.arm_config(a)) for a in base] == keys
    assert [common.arm_config(a).warm_start.seed for a in base] == [0, 1, 2]
    assert [common.arm_config(a).train.seed for a in base] == [0, 1, 2]
    # an arm that asks for another warm start keeps it
    pinned = settings.make_arm("x", "alfworld_cpu", "full", ("warm_start.seed=5",), seed=1)
    assert common.arm_config(pinned).warm_start.seed == 5


def test_figures_share_runs_with_fig6():
    mods = reproduce.modules([])
    arms = reproduce.collect_arms(mods, "quick")
    from experiments.figures import fig3_pilot, fig6_success
    fig6 = {a.key for a in fig6_success.arms("quick")}
    fig3 = {a.key for a in fig3_pilot.arms("quick")}
    assert len(fig3 & fig6) == 2  # Baseline and Comp. RL on MiniHack Room, seed 0
    # alfworld_cpu has SDAE on: SDAE's "on" arms are Fig. 6's runs, its "off" arms are not
    from experiments.figures import sdae
    on = {a.key for a in sdae.arms("quick") if a.label.endswith("+ SDAE")}
    off = {a.key for a in sdae.arms("quick") if not a.label.endswith("+ SDAE")}
    assert on <= fig6 and not off & fig6 and len(off) == len(on) > 0
    assert len(arms) == len({a.key for a in arms})
    assert sum(a.est_s for a in arms) < 3600  # the stated quick budget


# --------------------------------------------------------------------------- skip / resume


class FakeRunner:
    """Stands in for subprocess.run: records commands, writes metrics up to a step."""

    def __init__(self, upto):
        self.calls, self.upto = [], upto

    def __call__(self, cmd, **kw):
        self.calls.append(cmd)
        out = next(c.split("=", 1)[1] for c in cmd if c.startswith("--out_dir="))
        write_rows(out, rows_of([(s, 0.5) for s in range(self.upto + 1)]))
        return subprocess.CompletedProcess(cmd, 0)


def test_run_arm_skips_finished_resumes_checkpointed_restarts_others(tmp_path):
    root = str(tmp_path)
    arm = common.Arm("x", "alfworld_cpu", ("train.steps=3",), 0)
    out = common.run_dir(arm, root)
    write_rows(out, rows_of([(0, 0.0), (1, 0.1)]))  # died at step 1, no checkpoint
    runner = FakeRunner(3)
    res = common.run_arm(arm, root, runner=runner)
    assert res.status == "done" and "--resume" not in runner.calls[0]
    assert runner.calls[0][-1] == "--train.seed=0" and "--config=alfworld_cpu" in runner.calls[0]
    cache = f"--warm_start.cache_dir={os.path.join(root, 'warm_start_cache')}"
    assert cache in runner.calls[0]
    assert common.run_arm(arm, root, runner=runner).status == "skipped"
    assert len(runner.calls) == 1
    arm2 = common.Arm("y", "alfworld_cpu", ("train.steps=4",), 1)
    out2 = common.run_dir(arm2, root)
    write_rows(out2, rows_of([(0, 0.0), (1, 0.1), (2, 0.2)]))
    os.makedirs(os.path.join(out2, "checkpoints", "2"))
    short = FakeRunner(3)  # the run stops early: recorded as failed
    assert common.run_arm(arm2, root, runner=short).status == "failed"
    assert "--resume" in short.calls[0]
    record = common.load_record(arm2, root)
    assert record["finished"] is False and record["attempts"][0]["resumed"] is True
    frequent = FakeRunner(4)  # --checkpoint_every: a flag of the command, not of the run name
    assert common.run_arm(arm2, root, runner=frequent, checkpoint_every=2).status == "done"
    assert "--train.checkpoint_every=2" in frequent.calls[0] and "--resume" in frequent.calls[0]
    assert "--start_fresh" not in frequent.calls[0]  # it has a checkpoint to resume from
    with pytest.raises(ValueError, match="checkpoint_every=-1"):
        arm2.command(out2, checkpoint_every=-1)
    record = common.load_record(arm2, root)
    assert len(record["attempts"]) == 2 and record["finished"] is True
    assert record["wall_s"] == pytest.approx(sum(a["wall_s"] for a in record["attempts"]))


def test_a_run_that_died_before_its_first_checkpoint_is_started_again(tmp_path):
    """It holds config.json and maybe warm-start progress, no checkpoint:
    --resume --start_fresh (run.py refuses a bare --resume there)."""
    from crl_jax.training.config_io import save_config_json
    root = str(tmp_path)
    arm = common.Arm("x", "alfworld_cpu", ("train.steps=3",), 0)
    out = common.run_dir(arm, root)
    os.makedirs(out)
    save_config_json(common.arm_config(arm), os.path.join(out, "config.json"))
    runner = FakeRunner(3)
    assert common.run_arm(arm, root, runner=runner).status == "done"
    assert "--resume" in runner.calls[0] and "--start_fresh" in runner.calls[0]


def test_run_made_with_other_settings_is_set_aside_and_rerun(tmp_path):
    from crl_jax.training.config_io import apply_overrides, save_config_json
    root = str(tmp_path)
    arm = common.Arm("x", "alfworld_cpu", ("train.steps=3",), 0)
    out = common.run_dir(arm, root)
    assert common.run_arm(arm, root, runner=FakeRunner(3)).status == "done"  # + its record
    # the same settings in another place: not stale, skipped
    same = apply_overrides(common.arm_config(arm), ["train.out_dir=elsewhere",
                                                    "warm_start.cache_dir=/c",
                                                    "train.checkpoint_every=1"])
    save_config_json(same, os.path.join(out, "config.json"))
    assert common.stale_settings(arm, out) == []
    assert common.run_arm(arm, root, runner=FakeRunner(3)).status == "skipped"
    # the preset has changed since: the old run is moved aside and the arm runs again
    old = apply_overrides(common.arm_config(arm), ["train.eval_every=7"])
    save_config_json(old, os.path.join(out, "config.json"))
    assert common.stale_settings(arm, out) == ["train.eval_every: 7 -> 5"]
    runs, notes = common.load_runs([arm], root)  # figures do not draw it
    assert runs == {} and "other settings (train.eval_every: 7 -> 5)" in notes[0]
    runner = FakeRunner(3)
    assert common.run_arm(arm, root, runner=runner).status == "done" and len(runner.calls) == 1
    aside = [n for n in os.listdir(root) if ".stale-" in n]
    assert len(aside) == 2  # the directory and its record
    moved = next(os.path.join(root, n) for n in aside if not n.endswith(".arm.json"))
    assert os.path.exists(os.path.join(moved, "config.json"))
    assert not os.path.exists(os.path.join(out, "config.json"))  # the fake run wrote none


def test_unfinished_run_is_drawn_and_named(tmp_path):
    arm = common.Arm("x", "alfworld_cpu", ("train.steps=4",), 0)
    write_rows(common.run_dir(arm, str(tmp_path)), rows_of([(0, 0.1), (1, 0.2), (2, 0.3)]))
    runs, notes = common.load_runs([arm], str(tmp_path))
    assert len(runs["x"][0]) == 3
    assert notes == ["x (seed 0): unfinished, step 2 of 4: its last numbers are not final"]
    write_rows(common.run_dir(arm, str(tmp_path)), rows_of([(s, 0.1) for s in range(5)]))
    assert common.load_runs([arm], str(tmp_path))[1] == []


def fake_rows(arm):
    """Known values: success 0.2 + 0.1 seed (baseline) or 0.3 + 0.1 seed (any
    experience mode); actions 10 (baseline) / 5; timing 2 s (+1 s with experience)."""
    mode = common.override_value(arm, "experience.mode")
    exp = mode != "none"
    s = (0.3 if exp else 0.2) + 0.1 * arm.seed
    steps = int(common.override_value(arm, "train.steps"))
    envs = ("MiniHack-Room-Ultimate-5x5-v0", "webshop", "alfworld")
    rows = []
    for step in range(steps + 1):
        r = {"step": step, "time": 0.0}
        if step:
            r.update({"train/success": s, "train/actions": 5.0 if exp else 10.0,
                      "train/actions_when_won": 4.0, "time/rollout": 3.0 if exp else 2.0})
        if step in (0, steps):
            r.update({"eval_no_exp/success": s, "eval_no_exp/actions": 7.0})
            if exp:
                r.update({"eval_with_exp/success": s + 0.05, "eval_with_exp/actions": 6.0})
            if arm.preset == "multitask3_cpu":
                r.update({f"eval_no_exp/{e}/success": s for e in envs})
        rows.append(r)
    return rows


def test_reproduce_end_to_end_on_fake_runs(tmp_path):
    root, out = tmp_path / "runs", tmp_path / "out"
    results = tmp_path / "docs" / "RESULTS.md"
    mods = reproduce.modules([])
    for arm in reproduce.collect_arms(mods, "quick"):
        write_rows(common.run_dir(arm, str(root)), fake_rows(arm))
    cmd = [sys.executable, os.path.join(REPO, "experiments", "figures", "reproduce.py"),
           "--budget=quick", f"--root={root}", f"--out={out}", f"--results={results}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = ["fig3a_pilot_experience", "fig3b_pilot_advantages", "fig6_success", "fig7_actions",
             "table1_multitask", "fig9a_extractor", "fig9b_self_distillation", "fig9c_latency",
             "fig9d_task_scaling", "fig5_ablations", "sdae"]
    for n in names:
        assert (out / f"{n}.png").stat().st_size > 1000
    fig6 = json.loads((out / "fig6_success.json").read_text())
    alf = next(p for p in fig6["panels"] if p["title"] == "ALFWorld: training batch")
    assert alf["series"]["Comp. RL"]["mean"] == pytest.approx([0.4, 0.4])
    assert alf["series"]["Baseline (GRPO)"]["min"] == pytest.approx([0.2, 0.2])
    lat = json.loads((out / "fig9c_latency.json").read_text())
    assert lat["series"]["with experience pipeline"] == {"x": [8, 32], "y": [3.0, 3.0]}
    text = results.read_text()
    for n in names:
        assert f"../out/{n}.png" in text
    # success ratio of means: (0.3+0.4+0.5)/3 / ((0.2+0.3+0.4)/3); actions 10/5
    assert "| ALFWorld | 1.33x (seeds 1.50, 1.33, 1.25) |" in text
    headline = text.split("## Headline")[1].split("##")[0]
    assert "| 2.00x (seeds 2.00, 2.00, 2.00) | 2x |" in headline
    assert text.rstrip().endswith("/docs/FINDINGS.md).")  # the reading is FINDINGS.md
    # Table 1 runs one seed at quick (seed 0: 0.3); per-env keys only without experience
    assert "| Comp. RL (eval without) | 0.30 (0.75) | 0.30 (0.84) | 0.30 (0.74) | 0.30 (0.78) | 0.30 |" in text
    assert "| Comp. RL (eval with exp.) | n/a (0.78) | n/a (0.87) | n/a (0.82) | 0.35 (0.82) | 0.35 |" in text
    fig6_section = text.split("## Fig. 6")[1].split("## Fig. 7")[0]
    assert "Missing data" not in fig6_section


# --------------------------------------------------------------------------- a real run


def test_one_real_tiny_arm_through_the_subprocess(tmp_path):
    arm = common.Arm("tiny", "minihack_room_cpu",
                     ("train.steps=1", "warm_start.actor_steps=2", "warm_start.demos=6",
                      "rollout.max_turns=3", "env.num_eval_tasks=2", "train.tasks_per_step=2",
                      "train.group_size=2", "warm_start.vocab_size=400", "experience.mode=none",
                      "train.eval_every=0", "train.checkpoint_every=0"), seed=0)
    res = common.run_arm(arm, str(tmp_path), timeout_s=300)
    log = os.path.join(common.run_dir(arm, str(tmp_path)), "run.log")
    assert res.status == "done", open(log).read()[-3000:]
    rows = common.read_rows(os.path.join(common.run_dir(arm, str(tmp_path)), "metrics.jsonl"))
    assert [r["step"] for r in rows] == [1]
    assert rows[0]["train/episodes"] == 4  # 2 tasks x group 2
    assert common.load_record(arm, str(tmp_path))["finished"] is True
    assert common.run_arm(arm, str(tmp_path)).status == "skipped"
    assert os.listdir(tmp_path / "warm_start_cache")  # the warm start was stored for other arms


def test_results_doc_ends_with_a_pointer_to_the_findings(tmp_path):
    from experiments.figures import results_doc
    path = tmp_path / "docs" / "RESULTS.md"
    path.parent.mkdir()
    path.write_text("# Results\n\n## Reading\n\nan old hand-written reading\n")
    results_doc.write_results(str(path), [], "full", "cmd", 60.0, 120.0)
    text = path.read_text()
    assert "an old hand-written reading" not in text and "TODO" not in text
    reading = text.split("## Reading\n\n")[1]
    link = os.path.relpath(os.path.join(REPO, "docs", "FINDINGS.md"), tmp_path / "docs")
    assert reading == f"{reading.split('](')[0]}]({link}).\n" and "FINDINGS.md" in reading
    # the committed document sits beside it: a plain relative link
    assert results_doc.reading_section(os.path.join(REPO, "docs"))[2].endswith("](FINDINGS.md).")
    with open(os.path.join(REPO, "docs", "RESULTS.md"), encoding="utf-8") as f:
        committed = f.read()
    assert committed.endswith("\n".join(results_doc.reading_section(os.path.join(REPO, "docs"))))


def test_presets_and_seeds_flags_restrict_the_arms_and_reject_unknown_values():
    # The command line once each way (a listing, an error's exit status) ...
    base = [sys.executable, os.path.join(REPO, "experiments", "figures", "reproduce.py"),
            "--budget=quick", "--only=fig6", "--dry_run"]
    some = subprocess.run(base + ["--presets=alfworld_cpu", "--seeds=0,2"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert some.returncode == 0, some.stderr[-2000:]
    listed = [line for line in some.stdout.splitlines() if "min alone" in line]
    assert len(listed) == 4 and all("alfworld_cpu-" in x for x in listed), some.stdout
    assert all(("-s0-" in x) != ("-s2-" in x) for x in listed)
    bad = subprocess.run(base + ["--presets=nope"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "valid: ['alfworld_cpu'" in bad.stderr
    # ... and the rest through the function main() filters with (no interpreter start each).
    arms = reproduce.collect_arms(reproduce.modules(["fig6"]), "quick")
    alfworld = reproduce.keep_arms(arms, "presets", ["alfworld_cpu"], lambda a: a.preset)
    assert len(alfworld) == 6 and all(a.preset == "alfworld_cpu" for a in alfworld)
    with pytest.raises(ValueError, match=r"valid: \['0', '1', '2'\]"):
        reproduce.keep_arms(arms, "seeds", ["7"], lambda a: str(a.seed))
    name = listed[0].split()[3]  # "  9.3 min alone  <run name>  <label> ..."
    assert [a.run_name for a in reproduce.keep_arms(arms, "runs", [name], lambda a: a.run_name)] == [name]
    # --runs keeps the order it names the runs in (e.g. a reference first)
    named = [line.split()[3] for line in listed[:3]][::-1]
    assert [a.run_name for a in reproduce.keep_arms(arms, "runs", named, lambda a: a.run_name,
                                                    in_wanted_order=True)] == named
    assert [a.run_name for a in reproduce.keep_arms(arms, "runs", named, lambda a: a.run_name)] \
        == named[::-1]
    with pytest.raises(ValueError, match=r"--runs \['nope'\] have no arms"):
        reproduce.keep_arms(arms, "runs", ["nope"], lambda a: a.run_name)


def test_task_scaling_names_an_unfinished_run_in_its_row(tmp_path):
    from experiments.figures import fig9
    root, out = str(tmp_path / "runs"), str(tmp_path / "out")
    for arms in fig9.scaling_arms("quick").values():
        for arm in arms:
            write_rows(common.run_dir(arm, root), fake_rows(arm))
    # the 6-task baseline stops halfway: its row must say so, not only the notes
    six_base = next(a for a in fig9.scaling_arms("quick")["6 tasks"] if a.label == fig9.BASE)
    half = fake_rows(six_base)[:1 + int(common.override_value(six_base, "train.steps")) // 2]
    write_rows(common.run_dir(six_base, root), half)
    rec = fig9.make_scaling(root, "quick", out)
    labels = {r[0] for t in rec["tables"] for r in t["rows"]}
    assert labels == {"3 tasks", f"6 tasks (unfinished: {fig9.BASE})"}

