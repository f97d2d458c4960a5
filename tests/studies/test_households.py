"""The households study: its arms differ from each group's GRPO only by
their mode and their control's overrides (and the extractor-batch arm by
its batch), the no-homes group adds exactly
env.home_rate=0, and the held-out table reads the last evaluation of each
seed (checked on hand-written records)."""
import json

from experiments.figures.ablation import variant_arms
from experiments.studies import household_arms, households


def test_arms_differ_from_their_grpo_by_mode_and_control_only():
    arms = households.arms("full")
    assert len(arms) == 279 and households.arms("quick") == []
    assert households.make("", "quick", "") == []
    homes = variant_arms(household_arms.PRESET, "full", household_arms.HOMES)
    grpo = [a for a in homes if a.label == household_arms.BASE]
    for variants, regime in ((household_arms.HOMES, ()), (household_arms.NONE, household_arms.NO_HOMES),
                             (household_arms.SMALL, household_arms.SMALL_ROOMS),
                             (household_arms.TWELVE, household_arms.TWELVE_TURNS),
                             (household_arms.FORTY, household_arms.FORTY_STEPS),
                             (household_arms.TWO, household_arms.TWO_HOUSEHOLDS),
                             (household_arms.TWO_KEPT, household_arms.TWO_HOUSEHOLDS),
                             (household_arms.KEPT, ()), (household_arms.HIGH, household_arms.RATE),
                             (household_arms.MANY, household_arms.RATE + household_arms.MANY_ROOMS),
                             (household_arms.FORMS, household_arms.FORM),
                             (household_arms.READS, household_arms.READ)):
        for arm in variant_arms(household_arms.PRESET, "full", variants):
            base = next(g for g in grpo if g.seed == arm.seed)
            extra = set(arm.overrides) - set(base.overrides)
            # the one arm that tunes the pipeline says so in its label
            tuned = ({"experience.bank.train_batch_size=8"} if "batches of 8" in arm.label else
                     {"warm_start.extractor_missteps=0.5", "warm_start.extractor_reads_shown=true"}
                     if arm.label.startswith(household_arms.SEEN) else set())
            if "votes kept" in arm.label:
                tuned |= set(household_arms.VOTES)
            if "wandering expert" in arm.label:
                tuned |= set(household_arms.WANDER)
            if "greedy extractor" in arm.label:
                tuned |= set(household_arms.GREEDY)
            assert {o for o in extra if not o.startswith(("experience.mode=", "controls."))} \
                == set(regime) | tuned, arm.label
    # a control valid only with its mode is kept, not dropped as a no-op
    rule = [a for a in homes if a.label == household_arms.RULE]
    assert len(rule) == 3 and all({"controls.lesson_reader=rule", "experience.mode=static_online"}
                                  <= set(a.overrides) for a in rule)


def _write(root, arm, evals):
    run = root / arm.run_name
    run.mkdir(parents=True)
    with open(run / "metrics.jsonl", "w") as f:
        for step, value in evals:
            f.write(json.dumps({"step": step, "eval_no_exp/success": value,
                                "eval_unseen_no_exp/success": value / 2}) + "\n")


def test_held_out_table_reads_each_seeds_last_evaluation(tmp_path):
    grpo = [a for a in variant_arms(household_arms.PRESET, "full", household_arms.HOMES)
            if a.label == household_arms.BASE]
    for arm, last in zip(grpo, (0.25, 0.5, 0.75)):
        _write(tmp_path, arm, [(0, 0.1), (20, last)])
    notes = []
    table = households.held_out_table("full", str(tmp_path), notes)
    row = next(r for r in table["rows"] if r[0].startswith(household_arms.BASE))
    assert row[1] == "0, 1, 2"
    assert row[2] == "0.50 (0.25, 0.50, 0.75)"
    assert row[4] == "0.25 (0.12, 0.25, 0.38)"
    assert row[3] == "-"  # a run without experience has no with-experience evaluation
    assert row[-2:] == ["-", "-"]  # no lesson_writes.json
    comp = [a for a in variant_arms(household_arms.PRESET, "full", household_arms.HOMES)
            if a.label == household_arms.COMP]
    for arm, right in zip(comp, (0.1, 0.2, 0.3)):
        _write(tmp_path, arm, [(20, 0.5)])
        if arm.seed != 1:  # a seed without the file counts as missing, not as 0
            (tmp_path / arm.run_name / "lesson_writes.json").write_text(
                json.dumps({"right": right, "invented": 1 - right}))
    row = next(r for r in households.held_out_table("full", str(tmp_path), [])["rows"]
               if r[0].startswith(household_arms.COMP + " ("))
    assert row[-2:] == ["0.20 (0.10, n/a, 0.30)", "0.80 (0.90, n/a, 0.70)"]


def test_the_forty_step_arms_repeat_the_twenty_step_arms_first_twenty_steps():
    """docs/FINDINGS.md, "Households at 40 RL steps": with games drawn by
    seed and step and the same warm start, the committed 40-step records
    equal the 20-step ones at every step of the first 20, in every metric
    but wall-clock timings."""
    import os

    from experiments.figures import common

    def timing(key):
        return key == "time" or key.startswith("time/") or key.endswith(("_per_s", "_per_query"))

    short = variant_arms(household_arms.PRESET, "full", household_arms.DECAYED)
    long = variant_arms(household_arms.PRESET, "full", household_arms.DECAYED_FORTY)
    pairs = [(s, l) for s in short for l in long
             if s.seed == l.seed and l.label == f"{s.label}, 40 steps"
             and not s.label.startswith(household_arms.RULE)]  # the rule arms were not run
    compared = 0
    for s, l in pairs:
        paths = [os.path.join(common.run_dir(a, common.DEFAULT_ROOT), "metrics.jsonl") for a in (s, l)]
        if not all(os.path.exists(p) for p in paths):
            continue
        rows = [[json.loads(line) for line in open(p)] for p in paths]
        assert len(rows[0]) == 21 and len(rows[1]) == 41
        for a, b in zip(rows[0], rows[1][:21]):
            assert {k: v for k, v in a.items() if not timing(k)} == \
                {k: v for k, v in b.items() if not timing(k)}
        compared += 1
    assert compared == 6  # oracle and GRPO, three seeds


def test_coevolution_table_follows_each_arms_lessons_step_by_step(tmp_path):
    """Static Online's and Comp. RL's lesson accuracy, step by step, seed
    mean; GRPO and the rule reader have no row; a seed missing a step is
    left out of that step's mean."""
    arms = variant_arms(household_arms.PRESET, "full", household_arms.HOMES)
    accuracy = {household_arms.COMP: ((0.2, 0.4), (0.4, 0.6), (0.6, 0.8)),
                "Static Online Exp.": ((0.3, 0.3), (0.5, 0.5), (0.1, None))}
    for arm in arms:
        if arm.label in accuracy:
            run = tmp_path / arm.run_name
            run.mkdir(parents=True)
            with open(run / "metrics.jsonl", "w") as f:
                for step, value in zip((5, 10), accuracy[arm.label][arm.seed]):
                    if value is not None:
                        f.write(json.dumps({"step": step, "lessons/first_home": value}) + "\n")
            if arm.label == household_arms.COMP and arm.seed < 2:  # seed 2 measured nothing
                greedy = {"warm": {"right": 0.5}, "last": {"right": 0.5 + arm.seed / 10},
                          "changed": 0.2 * arm.seed}
                with open(run / "lesson_writes.json", "w") as f:
                    json.dump({"right": 0.9, "greedy": greedy}, f)
    table = households.coevolution_table(households._loaded("full", str(tmp_path)), str(tmp_path))
    assert table["columns"] == ["arm", "step 5", "step 10", "last, per seed",
                                "same prompts: warm right", "same prompts: last right",
                                "same prompts: answered differently"]
    rows = {r[0].split(" (")[0]: r[1:] for r in table["rows"]}
    assert set(rows) == {household_arms.COMP, "Static Online Exp."}
    assert rows[household_arms.COMP] == ["0.40", "0.60", "0.60 (0.40, 0.60, 0.80)",
                                         "0.50 (0.50, 0.50, n/a)", "0.55 (0.50, 0.60, n/a)",
                                         "0.10 (0.00, 0.20, n/a)"]
    assert rows["Static Online Exp."] == ["0.30", "0.40", "0.30 (0.30, 0.50, 0.10)", "-", "-", "-"]
