"""WebShop pages as text, in the original's text-mode layout: page elements
joined by ' [SEP] ', the instruction at the top, buttons by their label.

Clickable labels (what ``click[...]`` accepts) are lower-cased as in the
original's ``get_available_actions``.
"""
from __future__ import annotations

from crl_jax.envs.webshop.catalogue import Product

SEP = " [SEP] "
RESULTS_PER_PAGE = 10
BACK, NEXT, PREV, BUY = "Back to Search", "Next >", "< Prev", "Buy Now"
SUBPAGES = ("Description", "Features", "Reviews")


def search_page(instruction: str) -> str:
    return SEP.join(["WebShop", "Instruction:", instruction, "Search"])


def results_page(instruction: str, products: list[Product], page: int,
                 total: int) -> str:
    parts = ["Instruction:", instruction, BACK, f"Page {page} (Total results: {total})"]
    if page > 1:
        parts.append(PREV)
    if page * RESULTS_PER_PAGE < total:
        parts.append(NEXT)
    for p in products:
        parts += [p.asin, p.title, f"${p.price:.2f}"]
    return SEP.join(parts)


def item_page(instruction: str, p: Product, chosen: dict) -> str:
    parts = ["Instruction:", instruction, BACK, PREV]
    for dim, values in p.options.items():
        parts += [dim, *values]
    parts += [p.title, f"Price: ${p.price:.2f}", f"Rating: {p.rating}", *SUBPAGES, BUY]
    if chosen:
        parts.append("Selected: " + ", ".join(f"{d}: {v}" for d, v in chosen.items()))
    return SEP.join(parts)


def sub_page(instruction: str, p: Product, which: str) -> str:
    body = {"description": [p.description], "features": list(p.features),
            "reviews": [f"Rating {p.rating}", *p.reviews]}[which]
    return SEP.join(["Instruction:", instruction, BACK, PREV, *body])


def results_clickables(products: list[Product], page: int, total: int) -> list[str]:
    out = [BACK.lower()]
    if page > 1:
        out.append(PREV.lower())
    if page * RESULTS_PER_PAGE < total:
        out.append(NEXT.lower())
    return out + [p.asin.lower() for p in products]


def item_clickables(p: Product) -> list[str]:
    out = [BACK.lower(), PREV.lower()]
    for values in p.options.values():
        out += [v.lower() for v in values]
    return out + [s.lower() for s in SUBPAGES] + [BUY.lower()]
