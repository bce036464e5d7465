"""Seeded synthetic marketplace (SPEC §1): realistic enough that search and problems behave as on a
real one, deterministic byte for byte, and streamable to millions of products in bounded memory.

How it stays realistic:
- shops have Pareto-skewed sizes and specialise in a few related leaf categories, so multi-product
  shop tasks have answers;
- each leaf has a pool of underlying *items* (brand + model + attributes) whose popularity is skewed;
  the same item is listed by many shops under near-duplicate titles, as on a real marketplace;
- prices are log-normal per leaf (long-tailed), sold counts heavy-tailed, services per shop/listing.

How it stays deterministic and parallel: products are produced in fixed-size chunks, each with its
own RNG seeded from (seed, chunk); item specs are pure functions of (seed, leaf, item). Any worker
count therefore yields the same bytes in the same order.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from shoparena.catalog.models import Product, Shop
from shoparena.catalog.vocabulary import (
    JUNK_BRAND_RATE,
    LEAVES,
    MARKETING_PREFIXES,
    PACK_SUFFIXES,
    Leaf,
)

GENERATOR_VERSION = "synthetic-v1"
CHUNK_SIZE = 4096
PRODUCTS_PER_SHOP = 25
LISTINGS_PER_ITEM = 6
_ID_MULTIPLIER = 2654435761  # coprime with 9e9, so the id map below is a bijection
_ID_SPACE = 9_000_000_000

SHOP_WORDS = ["Mart", "Store", "Official", "Trading", "Shop", "Hub", "Depot", "Corner", "Express", "Outlet"]
SHOP_PREFIXES = [
    "Speed",
    "Lucky",
    "Manila",
    "Cebu",
    "Davao",
    "Golden",
    "Prime",
    "Happy",
    "Sunrise",
    "Metro",
    "Island",
    "Star",
    "Jade",
    "Blue",
    "Urban",
    "Pinoy",
    "Royal",
    "Smart",
    "Fresh",
    "Alpha",
]


def product_id_for(position: int) -> str:
    """A 10-digit, marketplace-looking id; a bijection of the position so ids never collide."""
    return str(1_000_000_000 + (position * _ID_MULTIPLIER + 48_271) % _ID_SPACE)


@dataclass(frozen=True)
class ItemSpec:
    """An underlying item that several shops list: the near-duplicate-title source."""

    leaf_index: int
    brand: str
    noun: str
    adjectives: tuple[str, ...]
    attributes: tuple[tuple[str, tuple[str, ...]], ...]
    model_code: str
    base_price: float


class CatalogGenerator:
    """Deterministic synthetic catalogue of `n_products` products from `seed`."""

    def __init__(self, n_products: int, seed: int = 0):
        if n_products < 1:
            raise ValueError("n_products must be at least 1")
        self.n_products = n_products
        self.seed = seed
        self.shops, self._shop_leaves = self._make_shops()
        self._shop_starts = []
        start = 0
        for shop in self.shops:
            self._shop_starts.append(start)
            start += shop.product_count
        self._items_per_leaf = max(12, n_products // (len(LEAVES) * LISTINGS_PER_ITEM))
        self._item = functools.lru_cache(maxsize=50_000)(self._make_item)

    # -- shops ---------------------------------------------------------------------------------
    def _make_shops(self) -> tuple[list[Shop], list[tuple[int, ...]]]:
        rng = random.Random(f"{self.seed}:shops")
        n_shops = max(3, math.ceil(self.n_products / PRODUCTS_PER_SHOP))
        weights = [rng.paretovariate(1.3) for _ in range(n_shops)]
        total = sum(weights)
        sizes = [max(1, int(self.n_products * w / total)) for w in weights]
        # Fix the rounding so sizes sum to n_products exactly, taking from/giving to the largest shops.
        diff = self.n_products - sum(sizes)
        order = sorted(range(n_shops), key=lambda j: -sizes[j])
        k = 0
        while diff != 0:
            j = order[k % n_shops]
            if diff > 0:
                sizes[j] += 1
                diff -= 1
            elif sizes[j] > 1:
                sizes[j] -= 1
                diff += 1
            k += 1
        groups: dict[str, list[int]] = {}
        for index, leaf in enumerate(LEAVES):
            groups.setdefault(leaf.path.split(" > ")[0], []).append(index)
        group_names = sorted(groups)
        shops, shop_leaves = [], []
        for j, size in enumerate(sizes):
            if size == 0:
                continue
            group = groups[rng.choice(group_names)]
            leaves = tuple(rng.sample(group, k=min(len(group), rng.randint(1, 3))))
            official = rng.random() < 0.12
            name = f"{rng.choice(SHOP_PREFIXES)} {rng.choice(SHOP_WORDS)}"
            if official:
                name = f"{name} Official"
            shops.append(
                Shop(
                    shop_id=str(100_000 + j * 37 + rng.randint(0, 36)),
                    name=f"{name} {j}",
                    rating=round(min(5.0, max(3.0, rng.gauss(4.6, 0.3))), 1),
                    official=official,
                    product_count=size,
                )
            )
            shop_leaves.append(leaves)
        return shops, shop_leaves

    # -- items ---------------------------------------------------------------------------------
    def _make_item(self, leaf_index: int, item_index: int) -> ItemSpec:
        leaf = LEAVES[leaf_index]
        rng = random.Random(f"{self.seed}:item:{leaf_index}:{item_index}")
        brand = "" if rng.random() < JUNK_BRAND_RATE else rng.choice(leaf.brands)
        attributes = []
        for key, values in leaf.attributes:
            if rng.random() < 0.8:
                chosen = rng.sample(values, k=1 if rng.random() < 0.85 else min(2, len(values)))
                attributes.append((key, tuple(chosen)))
        if brand:
            attributes.append(("brand", (brand.lower(),)))
        code = f"{rng.choice('ABCDEFGHJKLMNPRSTVXZ')}{rng.randint(1, 999)}"
        price = leaf.price_median * math.exp(rng.gauss(0, leaf.price_sigma))
        return ItemSpec(
            leaf_index=leaf_index,
            brand=brand,
            noun=rng.choice(leaf.nouns),
            adjectives=tuple(rng.sample(leaf.adjectives, k=2)),
            attributes=tuple(attributes),
            model_code=code,
            base_price=max(5.0, price),
        )

    # -- products ------------------------------------------------------------------------------
    def shop_of(self, position: int) -> int:
        return bisect.bisect_right(self._shop_starts, position) - 1

    def __iter__(self) -> Iterator[Product]:
        for chunk in range(self.n_chunks):
            yield from self.chunk(chunk)

    @property
    def n_chunks(self) -> int:
        return math.ceil(self.n_products / CHUNK_SIZE)

    def chunk(self, chunk_index: int) -> list[Product]:
        """Products of one chunk; a pure function of (seed, n_products, chunk_index)."""
        return [Product.model_construct(**d) for d in self.chunk_dicts(chunk_index)]

    def chunk_dicts(self, chunk_index: int) -> list[dict]:
        """The same products as plain dicts in field order (the fast path used by bulk builds)."""
        rng = random.Random(f"{self.seed}:chunk:{chunk_index}")
        start = chunk_index * CHUNK_SIZE
        stop = min(self.n_products, start + CHUNK_SIZE)
        return [self._product(position, rng) for position in range(start, stop)]

    def _product(self, position: int, rng: random.Random) -> dict:
        shop_index = self.shop_of(position)
        shop = self.shops[shop_index]
        specialties = self._shop_leaves[shop_index]
        leaf_index = rng.choice(specialties) if rng.random() < 0.85 else rng.randrange(len(LEAVES))
        leaf = LEAVES[leaf_index]
        item_index = int(self._items_per_leaf * rng.random() ** 2.5)
        item = self._item(leaf_index, item_index)
        title = self._title(item, leaf, rng)
        sku_options = self._sku_options(leaf, rng)
        attributes = {key: list(values) for key, values in item.attributes}
        price = item.base_price * rng.uniform(0.85, 1.2)
        price = float(round(price)) if rng.random() < 0.6 else round(price, 2)
        popularity = 1.0 / (1 + item_index) ** 0.3
        sold = int(math.exp(rng.gauss(2.0 + 3.0 * popularity, 1.6))) if rng.random() > 0.15 else 0
        service = []
        if shop.official:
            service.append("official")
        if rng.random() < 0.35:
            service.append("freeShipping")
        if rng.random() < 0.55:
            service.append("COD")
        if rng.random() < 0.12:
            service.append("flashsale")
        product_id = product_id_for(position)
        brand_text = item.brand or "No Brand"
        return {
            "product_id": product_id,
            "shop_id": shop.shop_id,
            "brand": item.brand,
            "category": leaf.path,
            "title": title,
            "short_description": self._short_description(item, leaf, rng),
            "description": (
                f"{brand_text} {item.noun} {item.model_code}. "
                + " ".join(f"{k.replace('_', ' ')}: {', '.join(v)}." for k, v in item.attributes)
                + f" Sold by {shop.name}. {rng.choice(_SHOP_NOTES)}"
            ),
            "specification": ";".join(
                [f"model:{item.model_code}", f"brand:{brand_text.lower()}"]
                + [f"{k}:{v[0]}" for k, v in item.attributes if k != "brand"][:4]
            ),
            "price": max(1.0, price),
            "sold_count": sold,
            "sku_options": sku_options,
            "attributes": attributes,
            "service": service,
            "main_image_url": f"https://img.shoparena.invalid/p/{product_id}.jpg",
            "product_url": f"https://shop.shoparena.invalid/products/-i{product_id}.html",
        }

    @staticmethod
    def _title(item: ItemSpec, leaf: Leaf, rng: random.Random) -> str:
        words = []
        if rng.random() < 0.35:
            words.append(rng.choice(MARKETING_PREFIXES))
        if item.brand and rng.random() < 0.85:
            words.append(item.brand)
        adjectives = list(item.adjectives)
        rng.shuffle(adjectives)
        words.extend(adjectives[: rng.randint(1, 2)])
        words.append(item.noun.title() if rng.random() < 0.5 else item.noun)
        attr_values = [v[0] for key, v in item.attributes if key != "brand" and v[0] != "none"]
        rng.shuffle(attr_values)
        words.extend(attr_values[: rng.randint(1, 3)])
        if rng.random() < 0.5:
            words.append(item.model_code)
        if rng.random() < 0.25:
            words.append(rng.choice(PACK_SUFFIXES))
        if rng.random() < 0.1:
            words.append(f"for {leaf.name}")
        return " ".join(words)

    @staticmethod
    def _sku_options(leaf: Leaf, rng: random.Random) -> dict[str, dict[str, str]]:
        if rng.random() < 0.2 or not leaf.sku_dims:
            return {}
        dims = [d for d in leaf.sku_dims if rng.random() < 0.75] or [leaf.sku_dims[0]]
        combos: list[dict[str, str]] = [{}]
        for key, values in dims:
            picked = rng.sample(values, k=rng.randint(1, min(4, len(values))))
            combos = [{**c, key: v} for c in combos for v in picked][:9]
        return {str(i + 1): combo for i, combo in enumerate(combos)}

    @staticmethod
    def _short_description(item: ItemSpec, leaf: Leaf, rng: random.Random) -> str:
        lines = [
            f"{item.adjectives[0].capitalize()} {item.noun} for everyday use.",
            f"Made for {leaf.name.lower()} lovers who want quality and value.",
            rng.choice(_BULLETS),
        ]
        return ";".join(lines) + ";"


_BULLETS = [
    "100% brand new and high quality.",
    "Ships within 24 hours from our local warehouse.",
    "Satisfaction guaranteed or your money back.",
    "Please allow 1-2cm difference due to manual measurement.",
    "Colour may vary slightly due to lighting and monitor settings.",
]
_SHOP_NOTES = [
    "Follow our store for more good products.",
    "We are a local seller with fast delivery and after-sales service.",
    "Leave a 5-star review with photos and get a voucher on your next order.",
    "Contact us for bulk orders and wholesale prices.",
]
