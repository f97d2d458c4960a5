"""WebShop's purchase reward.

Original formula (Yao et al. 2022, web_agent_site/engine/goal.py):

    r = r_type * (|matched attributes| + |matched options| + 1[price <= budget])
               / (|goal attributes| + |goal options| + 1)

The original's r_type comes from fuzzy matching of query, category and
title; here product types are exact, so r_type = 1 for the goal's product
type, 0.5 for another type of the same category, 0.1 otherwise. An
attribute matches if it is among the product's attributes or in its title;
an option matches if the chosen value for that dimension equals the goal's.
"""
from __future__ import annotations

from crl_jax.envs.webshop.catalogue import Goal, Product


def type_reward(product: Product, goal: Goal) -> float:
    if product.product_type == goal.product_type:
        return 1.0
    return 0.5 if product.category == goal.category else 0.1


def purchase_reward(product: Product, chosen: dict, goal: Goal) -> float:
    """Reward of buying ``product`` with options ``chosen`` (dim -> value)."""
    title = product.title.lower()
    att = sum(a in product.attributes or a in title for a in goal.attributes)
    opt = sum(chosen.get(d) == v for d, v in goal.options.items())
    price_ok = float(product.price <= goal.price_upper)
    total = (att + opt + price_ok) / (len(goal.attributes) + len(goal.options) + 1)
    return type_reward(product, goal) * total
