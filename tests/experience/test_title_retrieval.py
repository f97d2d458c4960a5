"""Entries found by their title, and a similarity floor (ExperienceConfig
retrieval_key / min_similarity): what is embedded, what the query is, and
what the floor lets through, on both retrieval paths, against cosines
computed here with NumPy."""
import json

import numpy as np
import pytest

from crl_jax.experience import (AddEntry, EpisodeRecord, ExperienceBank, ExperienceConfig,
                                ExperienceManager, ExtractorReply, HashingEmbedder)
from crl_jax.experience.operations import entry_title, index_text
from crl_jax.rl import prompts

DIM = 64
PLANS = {"cool some mug and put it in cabinet": "go to fridge 1 > take mug 1 > cool mug 1",
         "put a clean soapbar in countertop": "go to sinkbasin 1 > clean soapbar 1",
         "find two book and put them in drawer": "go to shelf 1 > take book 1"}


def test_an_entry_title_is_its_goal_or_its_title_tag():
    assert entry_title("put a cool bread in fridge: go to fridge 1 > open fridge 1") == \
        "put a cool bread in fridge"
    assert entry_title("<title>Key room</title><content>take: the key</content>") == "Key room"
    assert entry_title("no colon here") == "no colon here"
    assert entry_title(": starts with a colon") == ": starts with a colon"
    assert index_text("a: b", "text") == "a: b" and index_text("a: b", "title") == "a"


def test_the_query_is_the_goal_alone_when_entries_are_found_by_title():
    assert prompts.retrieval_query("g", "you see a desk") == "goal: g, observation: you see a desk"
    assert prompts.retrieval_query(" g ", "you see a desk", "title") == "g"


@pytest.mark.parametrize("bad", [dict(retrieval_key="goal"), dict(min_similarity=1.5)])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ExperienceConfig(**bad)


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("synchronous", [True, False])
def test_the_floor_keeps_only_entries_that_close_to_the_query(synchronous):
    """Entries keyed by title; the floor sits between the own goal's cosine
    (1) and the best other goal's, computed here: a pool goal finds its own
    entry, a goal with no entry finds nothing, and without the floor it
    finds the nearest other entry."""
    emb = HashingEmbedder(DIM)
    goals = list(PLANS)
    titles = _unit(emb.embed(goals))
    new_goal = "heat some egg and put it in garbagecan"
    others = _unit(emb.embed([new_goal])) @ titles.T
    cross = titles @ titles.T
    best_other = max(others.max(), (cross - 2 * np.eye(len(goals))).max())
    floor = (best_other + 1.0) / 2
    assert best_other < 0.99  # the test needs goals that the embedder tells apart
    for min_similarity, want_new in ((float(floor), None), (-1.0, goals[int(others.argmax())])):
        config = ExperienceConfig(workers=1, top_k=1, retrieval_key="title",
                                  min_similarity=min_similarity, diversity_lambda=0.0)
        bank = ExperienceBank(config, DIM)
        manager = ExperienceManager(bank, emb, clock=lambda: 0.0, synchronous=synchronous)
        with bank, manager:
            texts = [f"{g}: {p}" for g, p in PLANS.items()]
            bank.apply([AddEntry("t", t, emb.embed([entry_title(t)])[0]) for t in texts])
            bank.flush()
            for goal, text in zip(goals, texts):
                hit = manager.retrieve(prompts.retrieval_query(goal, "obs", "title"), "t")
                assert [h.entry.text for h in hit] == [text]
                assert hit[0].similarity == pytest.approx(1.0, abs=1e-5)
            got = manager.retrieve(prompts.retrieval_query(new_goal, "obs", "title"), "t")
            if want_new is None:
                assert got == []
            else:
                assert [entry_title(h.entry.text) for h in got] == [want_new]
                assert got[0].similarity == pytest.approx(float(others.max()), abs=1e-5)


def test_consolidation_embeds_an_entry_by_its_title_and_shows_its_goals_entries():
    emb = HashingEmbedder(DIM)
    goal = "put a clean soapbar in countertop"
    entry = f"{goal}: {PLANS[goal]}"
    replies = iter([json.dumps([{"operation": "add", "entry": entry}]),
                    json.dumps([{"operation": "add", "entry": "x: y"}])])
    shown = []

    def extractor(request):
        shown.append([e.text for e in request.shown_entries])
        return ExtractorReply("prompt", next(replies))

    config = ExperienceConfig(workers=1, top_k=1, retrieval_key="title", min_similarity=0.95,
                              consolidation_context=1)
    bank = ExperienceBank(config, DIM)
    manager = ExperienceManager(bank, emb, extractor, clock=lambda: 0.0, synchronous=True)
    with bank, manager:
        manager.submit_episode(EpisodeRecord(goal, "traj", True, "t", step=1)).result(5)
        manager.drain()
        [stored] = bank.snapshot.entries.values()
        np.testing.assert_allclose(_unit(stored.embedding), _unit(emb.embed([goal])[0]), atol=1e-6)
        # The next episode of this goal is shown the entry (found by its goal).
        manager.submit_episode(EpisodeRecord(goal, "traj", True, "t", step=2)).result(5)
        assert shown == [[], [entry]]


@pytest.mark.parametrize("key", ["text", "title"])
def test_guided_episodes_query_by_goal_and_read_nothing_on_a_miss(key):
    """The rollout builds the query the bank's key asks for; a guided
    episode whose retrieval found nothing plays without an experience line."""
    from crl_jax.envs.registry import make_env
    from crl_jax.rl.rollout import RolloutConfig, RolloutEngine
    from tests.rl.test_tools_and_distillation import CharTokenizer, ScriptedSampler
    tok = CharTokenizer()
    envs = [make_env("alfworld", split="generated", num_generated=2, seed=0) for _ in range(2)]
    engine = RolloutEngine(ScriptedSampler(tok, [["look"], ["look"]]), tok,
                           RolloutConfig(max_turns=1, history=1), retrieval_key=key)
    asked = []

    def retrieve(queries, task_keys):
        asked.extend(queries)
        return [("plan A", 7), None]

    eps = engine.play(envs, [0, 1], [True, True], retrieve=retrieve)
    goals = [e.goal for e in eps]
    firsts = [e.first_observation for e in eps]
    assert asked == [prompts.retrieval_query(g, o, key) for g, o in zip(goals, firsts)]
    assert asked[0] == (goals[0] if key == "title" else f"goal: {goals[0]}, observation: {firsts[0]}")
    assert (eps[0].experience, eps[0].experience_id) == ("plan A", 7)
    assert eps[1].guided and not eps[1].experience and eps[1].experience_id is None
