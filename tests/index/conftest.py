"""A hand-built catalogue whose BM25 order and prices are known, for exact search-rule tests."""

from __future__ import annotations

import orjson
import pytest

from shoparena.index.catalog_dir import build_from_file, open_catalog


def _product(i: int, title: str, price: float, shop: str, service: list[str], sold: int) -> dict:
    return {
        "product_id": f"p{i:03d}",
        "shop_id": shop,
        "title": title,
        "price": price,
        "sold_count": sold,
        "service": service,
        # only the weaker matches carry SKU/attribute text, so the top-20 titles have equal lengths
        "attributes": {"material": ["brass"]} if i >= 30 and i % 7 == 0 else {},
        "sku_options": {"1": {"color_family": "red"}} if i >= 30 and i % 5 == 0 else {},
    }


def lamp_products() -> list[dict]:
    """70 lamps of equal title length; 'lamp' repeats less as the index grows, so BM25 order follows it."""
    services = [[], ["COD"], ["COD", "freeShipping"], ["official", "COD", "freeShipping"], ["flashsale"]]
    products = []
    for i in range(70):
        strength = 1 + (69 - i) // 10  # p000..p009 strongest
        title = " ".join(["lamp"] * strength + ["light"] * (8 - strength))
        products.append(
            _product(
                i,
                title,
                price=float(1000 - i * 10),
                shop=f"s{i % 3}",
                service=services[i % 5],
                sold=(i * 37) % 101,
            )
        )
    products.append(_product(900, "garden hose 20m", 50.0, "s12", ["COD"], 5))
    products.append(_product(901, "cheapest lamp ever", 0.5, "s123", ["COD"], 1000))
    return products


@pytest.fixture(scope="session")
def lamp_catalog(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lamps")
    source = folder / "lamps.jsonl"
    source.write_bytes(
        b"\n".join(orjson.dumps({"id": p["product_id"], "product": p}) for p in lamp_products())
    )
    build_from_file(folder / "cat", source)
    catalog = open_catalog(folder / "cat")
    yield catalog
    catalog.close()
