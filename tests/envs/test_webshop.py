"""WebShop re-implementation: catalogue, BM25, pages, reward, episodes."""
import math

import numpy as np
import pytest

from crl_jax.envs.webshop import WebShopEnv, WebShopExpert
from crl_jax.envs.webshop.catalogue import Goal, generate_catalogue, generate_goal
from crl_jax.envs.webshop.reward import purchase_reward
from crl_jax.envs.webshop.search import BM25Index, bm25_scores, tokenize


@pytest.fixture(scope="module")
def env():
    return WebShopEnv()


def test_catalogue_is_deterministic_and_well_formed():
    a, b = generate_catalogue(0, 1000), generate_catalogue(0, 1000)
    assert a == b and len(a) == 1000
    assert len({p.asin for p in a}) == 1000
    assert generate_catalogue(1, 50) != generate_catalogue(0, 50)
    assert {p.category for p in a} == {"beauty", "food", "fashion", "furniture", "electronics"}
    for p in a[:100]:
        assert 2 <= len(p.attributes) <= 4 and 1 <= len(p.options) <= 2 and p.price > 0


def test_goals_are_achievable_by_their_product(env):
    for seed in range(50):
        g = generate_goal(env.products, seed)
        p = env.by_asin[g.asin]
        assert set(g.attributes) <= set(p.attributes)
        assert all(v in p.options[d] for d, v in g.options.items())
        assert p.price <= g.price_upper
        assert purchase_reward(p, dict(g.options), g) == 1.0


def test_bm25_index_matches_reference_scores():
    docs = [p.title + " " + " ".join(p.attributes) for p in generate_catalogue(3, 200)]
    index = BM25Index(docs)
    toks = [tokenize(d) for d in docs]
    for q in ("gluten free granola", "black wireless mouse 2 pack", "solid wood bookshelf",
              "zzz unknown"):
        ref = bm25_scores(tokenize(q), toks)
        got = index.search(q, top_k=20)
        expect = [i for i in sorted(range(len(docs)), key=lambda i: (-ref[i], i))
                  if ref[i] > 0][:20]
        assert got == expect


def test_bm25_hand_computed():
    # two docs, query "a": df=1, n=2, idf=log(1+(2-1+.5)/(1+.5))=log 2
    s = bm25_scores(["a"], [["a", "b"], ["c"]], k1=0.9, b=0.4)
    avg = 1.5
    expect = math.log(2) * 1 * 1.9 / (1 + 0.9 * (1 - 0.4 + 0.4 * 2 / avg))
    assert s[0] == pytest.approx(expect) and s[1] == 0.0


def test_reward_formula_hand_computed(env):
    p = env.products[0]
    other_dim = {d: v[0] for d, v in p.options.items()}
    goal = Goal(p.asin, p.category, p.product_type, (p.attributes[0], "not an attribute"),
                {d: v[-1] for d, v in p.options.items()}, p.price - 1, "x")
    n_opt = len(p.options)
    wrong = sum(other_dim[d] != goal.options[d] for d in p.options)
    # 1 attribute matched, options matched = n_opt - wrong, price over budget
    expect = (1 + (n_opt - wrong) + 0) / (2 + n_opt + 1)
    assert purchase_reward(p, other_dim, goal) == pytest.approx(expect)
    # another type of the same category halves it; another category: 0.1
    same_cat = next(q for q in env.products if q.category == p.category
                    and q.product_type != p.product_type)
    g2 = Goal(p.asin, p.category, p.product_type, (), {}, 1e9, "x")
    assert purchase_reward(same_cat, {}, g2) == pytest.approx(0.5)
    other = next(q for q in env.products if q.category != p.category)
    assert purchase_reward(other, {}, g2) == pytest.approx(0.1)


def test_expert_wins_with_events(env):
    expert = WebShopExpert()
    for seed in range(60):
        text, info = env.reset(seed)
        assert text.startswith("WebShop [SEP] Instruction: [SEP] ")
        assert info.admissible_actions == () and info.extra["has_search_bar"]
        expert.reset()
        events = []
        while True:
            res = env.step(expert.act(env))
            events += res.info.subtask_events
            if res.done:
                break
        assert res.reward == 1.0 and res.info.won
        assert events[0] == "search" and events[-1] == "buy"
        assert {"open_item", "select_options"} <= set(events)


def test_pages_and_invalid_actions(env):
    env.reset(1)
    for bad in ("", "click[buy now]", "search[]", "buy", "x" * 10_000, "click[nothing]"):
        res = env.step(bad)
        assert res.info.invalid_action and not res.done and res.info.extra["page"] == "search"
    res = env.step("search[wireless earbuds]")
    assert not res.info.invalid_action
    parts = res.observation.split(" [SEP] ")
    assert parts[2:5] == ["Back to Search", "Page 1 (Total results: 50)", "Next >"]
    assert res.info.admissible_actions[:2] == ("click[back to search]", "click[next >]")
    assert env.step("search[more]").info.invalid_action  # no search bar here
    asin = parts[5]
    res = env.step(f"click[{asin}]")  # case-insensitive labels
    assert res.info.extra["page"] == "item" and "Buy Now" in res.observation
    assert env.step("click[reviews]").observation.split(" [SEP] ")[2:4] == [
        "Back to Search", "< Prev"]
    assert env.step("click[< prev]").info.extra["page"] == "item"


def test_random_clicks_never_crash_and_are_deterministic():
    def run(seed):
        env = WebShopEnv(max_steps=15)
        rng = np.random.default_rng(seed)
        out = [env.reset(seed)[0]]
        while True:
            acts = [f"click[{c}]" for c in env.clickables()] or ["search[shoes]"]
            acts += ["click[bogus]", ""]
            res = env.step(acts[rng.integers(len(acts))])
            out.append((res.observation, res.reward))
            if res.done:
                return out
    assert run(4) == run(4)
    assert len(run(5)) <= 16
