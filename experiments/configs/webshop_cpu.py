"""WebShop (re-implementation) at CPU scale (tiny models from scratch).

Budget: pages are cut to 400 characters (~120 tokens), actions like
search[...] / click[...] ~10 tokens; episodes end at "buy now" (~5 turns for
the expert, cap 15): ~32 x 8 turns a step, a few seconds each.

Its tiny actor cannot open a product (that means copying a product id from
the results page), so it never wins and its figures are not run
(docs/FINDINGS.md, "WebShop alone and SWE-Bench: not run").
"""
from experiments.configs._common import cpu_config


def get_config():
    return cpu_config("webshop_cpu", ("webshop",), max_turns=15, obs_chars=400,
                      max_new_tokens=24, train_split="train", eval_split="eval")
