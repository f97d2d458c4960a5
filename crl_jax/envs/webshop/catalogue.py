"""A deterministic synthetic product catalogue and goal instructions.

Five categories as in WebShop (beauty, food, fashion, furniture,
electronics); each product has a type, a brand, 2-4 attributes from its
category's vocabulary, 1-2 option dimensions (size, color, flavor, ...),
a price, a description, bullet features and reviews. A goal names one
product's type, some of its attributes, one value per option dimension and
a price ceiling above its price, so every goal is achievable with reward 1.
"""
from __future__ import annotations

import dataclasses

import numpy as np

# category -> (product types, attribute vocabulary, option dimensions, price range)
CATEGORIES: dict[str, tuple] = {
    "beauty": (
        ("shampoo", "face cream", "lip balm", "hair serum", "body lotion", "eye shadow palette"),
        ("paraben free", "cruelty free", "long lasting", "natural ingredients", "sulfate free",
         "fragrance free", "vegan", "travel size", "sensitive skin", "dermatologist tested"),
        {"size": ("2 oz", "4 oz", "8 fl oz", "16 fl oz", "pack of 3"),
         "scent": ("lavender", "coconut", "rose", "unscented", "citrus")},
        (5.0, 60.0)),
    "food": (
        ("granola", "green tea", "protein bar", "dark chocolate", "trail mix", "olive oil"),
        ("gluten free", "non gmo", "sugar free", "low carb", "keto friendly", "organic",
         "high protein", "kosher", "individually wrapped", "ready to eat"),
        {"flavor": ("original", "vanilla", "sea salt", "honey", "mixed berry"),
         "size": ("12 count", "24 count", "1 pound", "pack of 6", "2 pound")},
        (3.0, 45.0)),
    "fashion": (
        ("running shoes", "t-shirt", "hoodie", "jeans", "rain jacket", "ankle socks"),
        ("machine wash", "slim fit", "relaxed fit", "moisture wicking", "water resistant",
         "quick drying", "button closure", "long sleeve", "non slip", "breathable"),
        {"color": ("black", "navy blue", "heather grey", "olive green", "white", "red"),
         "size": ("small", "medium", "large", "x-large", "xx-large")},
        (10.0, 120.0)),
    "furniture": (
        ("bookshelf", "office chair", "coffee table", "bed frame", "floor lamp", "storage ottoman"),
        ("easy assembly", "solid wood", "space saving", "heavy duty", "height adjustable",
         "mid century", "metal frame", "living room", "storage space", "engineered wood"),
        {"color": ("walnut", "white", "black", "grey", "natural oak"),
         "size": ("small", "medium", "large", "queen", "king")},
        (30.0, 400.0)),
    "electronics": (
        ("wireless earbuds", "usb c cable", "power bank", "bluetooth speaker", "hdmi cable",
         "wireless mouse"),
        ("fast charging", "noise cancelling", "high speed", "long battery life", "easy to use",
         "plug and play", "water resistant", "compact size", "high definition", "dual band"),
        {"color": ("black", "white", "blue", "silver", "red"),
         "pack size": ("1 pack", "2 pack", "3 pack", "6 ft", "10 ft")},
        (8.0, 150.0)),
}
BRANDS = ("Acme", "Northwind", "Bluebird", "Everpeak", "Lumen", "Oakridge", "Zephyr",
          "Kestrel", "Marlow", "Solace", "Trident", "Verity")
REVIEW_WORDS = ("Great value.", "Works as described.", "Arrived quickly.",
                "Would buy again.", "Quality could be better.", "Exactly what I needed.",
                "Smaller than expected.", "Five stars.")


@dataclasses.dataclass(frozen=True)
class Product:
    asin: str
    category: str
    product_type: str
    title: str
    attributes: tuple[str, ...]
    options: dict  # dimension -> tuple of values
    price: float
    description: str
    features: tuple[str, ...]
    reviews: tuple[str, ...]
    rating: float


@dataclasses.dataclass(frozen=True)
class Goal:
    asin: str  # the product the goal was drawn from
    category: str
    product_type: str
    attributes: tuple[str, ...]
    options: dict  # dimension -> wanted value
    price_upper: float
    instruction: str


def generate_catalogue(seed: int = 0, num_products: int = 1000) -> tuple[Product, ...]:
    """``num_products`` products, the same for the same seed."""
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    rng = np.random.default_rng(seed)
    names = sorted(CATEGORIES)
    products = []
    for i in range(num_products):
        cat = names[i % len(names)]
        types, vocab, dims, (lo, hi) = CATEGORIES[cat]
        ptype = types[int(rng.integers(len(types)))]
        brand = BRANDS[int(rng.integers(len(BRANDS)))]
        attrs = tuple(vocab[j] for j in sorted(rng.choice(len(vocab), int(rng.integers(2, 5)),
                                                          replace=False)))
        dim_names = sorted(dims)
        chosen = dim_names if rng.random() < 0.6 else [dim_names[int(rng.integers(2))]]
        options = {}
        for d in chosen:
            vals = dims[d]
            k = int(rng.integers(2, len(vals) + 1))
            options[d] = tuple(vals[j] for j in sorted(rng.choice(len(vals), k, replace=False)))
        price = round(float(rng.uniform(lo, hi)), 2)
        title = f"{brand} {' '.join(a.title() for a in attrs[:2])} {ptype.title()}"
        if len(attrs) > 2:
            title += f", {', '.join(attrs[2:])}"
        avail = "; ".join(d + ": " + ", ".join(v) for d, v in options.items())
        desc = f"This {ptype} from {brand} is {', '.join(attrs)}. Available in {avail}." 
        features = tuple(f"{a.capitalize()}: designed for everyday {cat} use." for a in attrs)
        reviews = tuple(REVIEW_WORDS[int(j)] for j in rng.choice(len(REVIEW_WORDS), 3, replace=False))
        products.append(Product(
            asin=f"B{i:04d}{int(rng.integers(10**5)):05d}", category=cat, product_type=ptype,
            title=title, attributes=attrs, options=options, price=price, description=desc,
            features=features, reviews=reviews, rating=round(float(rng.uniform(2.5, 5.0)), 1)))
    return tuple(products)


def generate_goal(products: tuple[Product, ...], seed: int) -> Goal:
    """A shopping instruction drawn (deterministically) from ``seed``."""
    rng = np.random.default_rng([seed, 7919])
    p = products[int(rng.integers(len(products)))]
    n_att = int(rng.integers(1, min(3, len(p.attributes)) + 1))
    attrs = tuple(p.attributes[j] for j in sorted(rng.choice(len(p.attributes), n_att,
                                                             replace=False)))
    opts = {d: v[int(rng.integers(len(v)))] for d, v in p.options.items()}
    upper = float(np.ceil(p.price * rng.uniform(1.1, 1.8)))
    opt_text = " and ".join(f"{d}: {v}" for d, v in opts.items())
    instruction = (f"i need a {' and '.join(attrs)} {p.product_type} with {opt_text}, "
                   f"and price lower than {upper:.2f} dollars")
    return Goal(p.asin, p.category, p.product_type, attrs, opts, upper, instruction)
