"""experience.bank.merge_credit=sources: a merged lesson's guided episodes
credit the extractor samples that wrote the lessons it states (r(m), Eq. 3),
and only those; the paper's default credits nobody (hand-made entries)."""
import dataclasses

import numpy as np
import pytest

from crl_jax.envs.alfworld_lesson_merge import merge_lessons
from crl_jax.envs.alfworld_lessons import Lesson
from crl_jax.experience import (AddEntry, ExperienceBank, ExperienceConfig, ExperienceManager,
                                HashingEmbedder)
from crl_jax.experience.training_buffer import ExtractorTrainingBuffer
from crl_jax.training.config_io import apply_overrides
from experiments.configs import load_preset

ROOM = ("cabinet 1", "countertop 1", "drawer 1", "sinkbasin 1")
DIM = 8


def _towel(home, found=1, looked=1):
    return Lesson("handtowel", ROOM, (home,), evidence=((home, found, looked),)).text


def _soap(home):
    return Lesson("soapbar", ROOM, (home,), evidence=((home, 1, 1),)).text


def test_the_lesson_merger_says_which_inputs_each_lesson_states():
    texts = [_towel("cabinet 1"), "a plan", _soap("drawer 1"), _towel("cabinet 1", 0, 1),
             "A  plan", _towel("drawer 1")]
    merged = merge_lessons(texts, keep=1, evidence=True, sources=True)
    assert [indices for _, indices in merged] == [(0, 3, 5), (1, 4), (2,)]
    # the texts are those the merge gives without sources
    assert [text for text, _ in merged] == merge_lessons(texts, keep=1, evidence=True)
    # cabinet 1: 1 found in 2 looks, rate 2/4; drawer 1: 1 in 1, rate 2/3
    assert merged[0][0] == Lesson("handtowel", ROOM, ("drawer 1",), evidence=(
        ("cabinet 1", 1, 2), ("drawer 1", 1, 1))).text


def test_a_group_credits_its_held_samples_and_survives_a_checkpoint():
    buffer = ExtractorTrainingBuffer(batch_size=1, max_samples=2)
    buffer.add_sample("a", "p", "r", 0)
    buffer.add_sample("b", "p", "r", 0)
    buffer.share_credit("g", ["a", "b", "a"])
    assert not buffer.is_sample("g") and buffer.is_sample("a")
    assert buffer.credit("g", True)
    assert buffer.sample("a").outcomes == [1.0] and buffer.sample("b").outcomes == [1.0]
    with pytest.raises(ValueError, match="duplicate"):
        buffer.share_credit("a", ["b"])
    restored = ExtractorTrainingBuffer(batch_size=1, max_samples=2)
    restored.load_state_dict(buffer.state_dict())
    restored.add_sample("c", "p", "r", 1)  # evicts "a", the oldest sample
    assert restored.credit("g", False, baseline=0.5)
    assert restored.sample("b").outcomes == [1.0, -1.5] and restored.sample("a") is None
    assert not restored.credit("nobody", True)


def _merge_run(merge_credit):
    config = ExperienceConfig(workers=1, top_k=1, consolidation_context=0, merge_chunk=256,
                              merge_credit=merge_credit)
    bank = ExperienceBank(config, DIM)
    merger = lambda texts: merge_lessons(texts, keep=1, evidence=True,  # noqa: E731
                                         sources=merge_credit == "sources")
    manager = ExperienceManager(bank, HashingEmbedder(DIM), None, merger, clock=lambda: 0.0)
    return bank, manager


def _written(bank, manager, texts, keys, step):
    for key in keys:
        manager.training_buffer.add_sample(key, "p", "r", step)
    vectors = np.eye(DIM, dtype=np.float32)[:len(texts)]
    return bank.apply([AddEntry("t", text, v, step, source_call=key)
                       for text, v, key in zip(texts, vectors, keys)]).added_ids


def test_a_merged_lesson_credits_the_samples_it_states_and_not_those_of_earlier_merges():
    bank, manager = _merge_run("sources")
    buffer = manager.training_buffer
    with bank, manager:
        _written(bank, manager, [_towel("cabinet 1"), _towel("drawer 1"), _soap("drawer 1")],
                 ["a", "b", "c"], step=1)
        manager.merge("t", step=1).result(5)
        towel, soap = sorted(bank.snapshot.task_entries("t"), key=lambda e: e.text)
        assert soap.source_call == "c"  # alone in its key: kept as it was
        assert buffer.credit(towel.source_call, True)
        assert [buffer.sample(k).outcomes for k in "abc"] == [[1.0], [1.0], []]
        # the next step's lesson folds into the merged one: its reads credit
        # the new sample alone, as the earlier samples' were credited by theirs
        _written(bank, manager, [_towel("cabinet 1")], ["d"], step=2)
        manager.merge("t", step=2).result(5)
        towel = next(e for e in bank.snapshot.task_entries("t") if e.text.startswith("handtowel"))
        assert buffer.credit(towel.source_call, False)
        assert [buffer.sample(k).outcomes for k in "abd"] == [[1.0], [1.0], [-1.0]]
        assert towel.text == Lesson("handtowel", ROOM, ("cabinet 1",), evidence=(
            ("cabinet 1", 2, 2), ("drawer 1", 1, 1))).text


def test_the_papers_merged_entry_credits_nobody():
    bank, manager = _merge_run("none")
    with bank, manager:
        _written(bank, manager, [_towel("cabinet 1"), _towel("drawer 1")], ["a", "b"], step=1)
        manager.merge("t", step=1).result(5)
        (towel,) = bank.snapshot.task_entries("t")
        assert towel.source_call is None
        assert manager.training_buffer.ready_count() == 0


def test_merge_credit_needs_a_lesson_merger():
    cfg = load_preset("alfworld_households_cpu")
    assert apply_overrides(cfg, ["experience.bank.merge_credit=sources"]).experience.bank.merge_credit == "sources"
    with pytest.raises(ValueError, match="needs a lesson merger"):
        apply_overrides(cfg, ["experience.bank.merge_credit=sources", "experience.merger=dedup"])
    with pytest.raises(ValueError, match="merge_credit must be one of"):
        dataclasses.replace(cfg.experience.bank, merge_credit="all")
