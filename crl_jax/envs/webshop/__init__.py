"""WebShop, re-implemented offline.

The original WebShop (Yao et al. 2022) serves 1.18M scraped Amazon products
behind a Pyserini index; neither is reachable offline. This package rebuilds
the environment's mechanics on a deterministic synthetic catalogue: the same
page types rendered as text with ' [SEP] ' separators, the same actions
(search[...] and click[...]), BM25 keyword search with paged results, and
the original reward formula. Product texts and numbers are synthetic, so
scores are not comparable with published WebShop numbers.
"""
from crl_jax.envs.webshop.env import WebShopEnv
from crl_jax.envs.webshop.expert import WebShopExpert

__all__ = ["WebShopEnv", "WebShopExpert"]
