"""start_check: arms of one seed and warm-start key that did not start from
the same actor are named, by their step-0 evaluation; everything else is not."""
import os

from crl_jax.training.warm_cache import record_warm_start
from experiments.figures import common, settings
from experiments.figures.start_check import mixed_starts, step0_fingerprint
from tests.figures.test_figures import write_rows


def _rows(success, actions=6.0, tokens=5.0, steps=2):
    first = {"step": 0, "time": 0.0, "eval_no_exp/success": success,
             "eval_no_exp/actions": actions, "eval_no_exp/tokens_per_action": tokens}
    return [first] + [{"step": s, "time": 0.0, "train/success": 0.5} for s in range(1, steps + 1)]


def _run(tmp_path, name, key, rows):
    d = tmp_path / name
    os.makedirs(d)
    if key is not None:
        record_warm_start(str(d), key)
    return str(d), rows


def test_fingerprint_is_the_step0_evaluation_only():
    assert step0_fingerprint(_rows(0.25, 7.5, 5.25)) == (0.25, 7.5, 5.25)
    assert step0_fingerprint(_rows(0.25)[1:]) is None  # no step 0
    partial = [{"step": 0, "eval_no_exp/success": 0.25}]  # older runs without the other two
    assert step0_fingerprint(partial) is None


def test_same_key_same_start_is_silent(tmp_path):
    a = _run(tmp_path, "a", "k1", _rows(0.25))
    b = _run(tmp_path, "b", "k1", _rows(0.25))
    assert mixed_starts([("A", 0, *a), ("B", 0, *b)]) == []


def test_same_key_other_start_is_named_once_per_seed(tmp_path):
    a = _run(tmp_path, "a", "k1", _rows(0.25))
    b = _run(tmp_path, "b", "k1", _rows(0.25, actions=6.5))  # same success, other build
    c = _run(tmp_path, "c", "k1", _rows(0.25))
    d = _run(tmp_path, "d", "k1", _rows(0.1875))  # seed 1: alone in its group
    notes = mixed_starts([("A", 0, *a), ("B", 0, *b), ("C", 0, *c), ("A", 1, *d)])
    assert len(notes) == 1
    note = notes[0]
    assert note.startswith("seed 0: the arms on warm start k1 do not start from the same actor")
    assert "'A', 'C' (held-out success 0.250, 6.00 actions)" in note
    assert "'B' (held-out success 0.250, 6.50 actions)" in note


def test_other_keys_or_unrecorded_keys_are_not_compared(tmp_path):
    a = _run(tmp_path, "a", "k1", _rows(0.25))
    b = _run(tmp_path, "b", "k2", _rows(0.5))  # another warm start by design
    c = _run(tmp_path, "c", None, _rows(0.5))  # a run that predates the record
    assert mixed_starts([("A", 0, *a), ("B", 0, *b), ("C", 0, *c)]) == []


def test_load_runs_adds_the_note(tmp_path):
    comp = settings.make_arm("Comp. RL", "alfworld_cpu", "quick", seed=0)
    base = settings.make_arm("Baseline", "alfworld_cpu", "quick", seed=0, mode="none")
    steps = common.expected_steps(comp)
    for arm, success in ((comp, 0.25), (base, 0.1875)):
        where = common.run_dir(arm, str(tmp_path))
        write_rows(where, _rows(success, steps=steps))
        record_warm_start(where, "alfworld_cpu-ws7-same")
    runs, notes = common.load_runs([comp, base], str(tmp_path))
    assert set(runs) == {"Comp. RL", "Baseline"}
    mixed = [n for n in notes if "same actor" in n]
    assert len(mixed) == 1
    assert mixed[0].startswith("seed 0: the arms on warm start alfworld_cpu-ws7-same")
    assert "'Baseline' (held-out success 0.188" in mixed[0]
