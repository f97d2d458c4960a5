"""A WebShop expert for demonstrations.

It searches with the goal's attributes and product type, opens the first
listed product that fully satisfies the goal (paging up to a few result
pages), selects the wanted options and buys. If no listed product
qualifies it searches again with the title of the product the goal was
drawn from, which BM25 ranks first. It reads product details from the
catalogue (privileged), as a human demonstrator reads the item pages.
"""
from __future__ import annotations

from crl_jax.envs.webshop.catalogue import Goal, Product

MAX_RESULT_PAGES = 3


def satisfies(p: Product, goal: Goal) -> bool:
    title = p.title.lower()
    return (p.product_type == goal.product_type and p.price <= goal.price_upper
            and all(a in p.attributes or a in title for a in goal.attributes)
            and all(v in p.options.get(d, ()) for d, v in goal.options.items()))


class WebShopExpert:
    def __init__(self):
        self.reset()

    def reset(self):
        self._searches = 0
        self._pages_seen = 0

    def act(self, env) -> str:
        goal = env.goal
        if env.page == "search":
            self._searches += 1
            self._pages_seen = 0
            if self._searches == 1:
                return f"search[{' '.join(goal.attributes)} {goal.product_type}]"
            return f"search[{env.by_asin[goal.asin].title}]"
        if env.page == "results":
            self._pages_seen += 1
            for p in env._page_products():
                if satisfies(p, goal):
                    return f"click[{p.asin.lower()}]"
            if "next >" in env.clickables() and self._pages_seen < MAX_RESULT_PAGES:
                return "click[next >]"
            return "click[back to search]"
        if env.page == "item":
            if not satisfies(env.item, goal):
                return "click[< prev]"
            for dim, value in goal.options.items():
                if env.chosen.get(dim) != value:
                    return f"click[{value.lower()}]"
            return "click[buy now]"
        return "click[< prev]"
