"""The WebShop text environment (re-implementation; see the package doc).

Actions: ``search[query]`` on the search page, ``click[label]`` for any
clickable label of the current page (case-insensitive). Anything else
leaves the page unchanged with ``info.invalid_action`` set, as the
original does. The episode ends at ``click[buy now]`` with the original
reward; success (``won``) is reward 1. Without a purchase it ends after
``max_steps`` with reward 0.
"""
from __future__ import annotations

import functools
import re

from crl_jax.envs.base import StepInfo, StepResult
from crl_jax.envs.webshop import pages
from crl_jax.envs.webshop.catalogue import generate_catalogue, generate_goal
from crl_jax.envs.webshop.reward import purchase_reward
from crl_jax.envs.webshop.search import BM25Index

SUBTASKS = ("search", "open_item", "select_options", "buy")
MAX_RESULTS = 50
_ACTION = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=4)
def shop(catalogue_seed: int = 0, num_products: int = 1000):
    """(products, index by asin, BM25 index): built once per process."""
    products = generate_catalogue(catalogue_seed, num_products)
    docs = [" ".join([p.title, p.product_type, p.category, *p.attributes, *p.features])
            for p in products]
    return products, {p.asin: p for p in products}, BM25Index(docs)


class WebShopEnv:
    name = "webshop"

    def __init__(self, seed: int = 0, catalogue_seed: int = 0,
                 num_products: int = 1000, max_steps: int = 20):
        self.products, self.by_asin, self.index = shop(catalogue_seed, num_products)
        self._next_seed, self._max_steps = int(seed), max_steps
        self._done = True

    # -- protocol -----------------------------------------------------
    def reset(self, task: str | int | None = None) -> tuple[str, StepInfo]:
        if task is None:
            seed = self._next_seed
        elif isinstance(task, int) or (isinstance(task, str) and
                                       task.rsplit(":", 1)[-1].isdigit()):
            seed = int(str(task).rsplit(":", 1)[-1])
        else:
            raise ValueError(f"WebShop task must be an int seed or 'webshop:<seed>', got {task!r}")
        self._next_seed = seed + 1
        self.seed = seed
        self.goal = generate_goal(self.products, seed)
        self.page, self.query, self.results, self.result_page = "search", "", [], 1
        self.item, self.chosen, self.sub = None, {}, None
        self._turn, self._done, self._seen = 0, False, set()
        return self.render(), self._info(())

    def step(self, action: str) -> StepResult:
        if self._done:
            raise RuntimeError("step() after the episode ended; call reset()")
        self._turn += 1
        events, reward, bought = self._apply(action)
        won = reward >= 1.0 - 1e-9
        self._done = bought or self._turn >= self._max_steps
        invalid = events is None
        events = [e for e in (events or []) if e not in self._seen]
        self._seen.update(events)
        return StepResult(self.render(), reward, self._done,
                          self._info(events, won=won, invalid=invalid, reward=reward))

    def close(self) -> None:
        pass

    # -- state machine ------------------------------------------------
    def _apply(self, action):
        """Apply one action: (events or None if invalid, reward, bought)."""
        m = _ACTION.match(action) if isinstance(action, str) and len(action) < 500 else None
        if m is None:
            return None, 0.0, False
        kind, arg = m.group(1).lower(), m.group(2).strip()
        if kind == "search":
            if self.page != "search" or not arg:
                return None, 0.0, False
            self.query = arg
            self.results = [self.products[i] for i in self.index.search(arg, MAX_RESULTS)]
            self.page, self.result_page = "results", 1
            return ["search"], 0.0, False
        label = arg.lower()
        if label not in self.clickables():
            return None, 0.0, False
        if label == pages.BACK.lower():
            self.page, self.item, self.chosen = "search", None, {}
        elif label == pages.NEXT.lower():
            self.result_page += 1
        elif label == pages.PREV.lower():
            if self.page == "results":
                self.result_page -= 1
            elif self.page == "item":
                self.page, self.item, self.chosen = "results", None, {}
            else:
                self.page = "item"
        elif self.page == "results":
            self.page, self.item, self.chosen = "item", self.by_asin[label.upper()], {}
            return (["open_item"] if self._right_type() else []), 0.0, False
        elif label == pages.BUY.lower():
            return ["buy"], purchase_reward(self.item, self.chosen, self.goal), True
        elif label in ("description", "features", "reviews"):
            self.page, self.sub = "sub", label
        else:  # an option value
            dim = next(d for d, vals in self.item.options.items()
                       if label in (v.lower() for v in vals))
            self.chosen[dim] = next(v for v in self.item.options[dim] if v.lower() == label)
            done_opts = all(self.chosen.get(d) == v for d, v in self.goal.options.items())
            return (["select_options"] if self._right_type() and done_opts else []), 0.0, False
        return [], 0.0, False

    def _right_type(self) -> bool:
        return self.item is not None and self.item.product_type == self.goal.product_type

    def _page_products(self):
        start = (self.result_page - 1) * pages.RESULTS_PER_PAGE
        return self.results[start:start + pages.RESULTS_PER_PAGE]

    def clickables(self) -> list[str]:
        if self.page == "results":
            return pages.results_clickables(self._page_products(), self.result_page,
                                            len(self.results))
        if self.page == "item":
            return pages.item_clickables(self.item)
        if self.page == "sub":
            return [pages.BACK.lower(), pages.PREV.lower()]
        return []

    def render(self) -> str:
        instr = self.goal.instruction
        if self.page == "results":
            return pages.results_page(instr, self._page_products(), self.result_page,
                                      len(self.results))
        if self.page == "item":
            return pages.item_page(instr, self.item, self.chosen)
        if self.page == "sub":
            return pages.sub_page(instr, self.item, self.sub)
        return pages.search_page(instr)

    def _info(self, events, won=False, invalid=False, reward=0.0) -> StepInfo:
        acts = tuple(f"click[{c}]" for c in self.clickables())
        return StepInfo(won=won, admissible_actions=acts, goal=self.goal.instruction,
                        subtask_events=tuple(events), subtasks=SUBTASKS,
                        invalid_action=invalid, task_id=f"webshop:{self.seed}",
                        extra={"turn": self._turn, "page": self.page,
                               "has_search_bar": self.page == "search", "reward": reward})
