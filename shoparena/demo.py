"""`make demo`: the main job on embedded defaults, end to end, in about a minute on a laptop.

Stage 1 builds a 20k-product synthetic catalogue (generate + BM25 index + product store) and runs a
few find_product searches with the filters agents use. Later stages are appended as the pipeline grows.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from shoparena.index.catalog_dir import CatalogDirError, build_synthetic, open_catalog, read_meta

DEMO_DIR = Path(os.environ.get("SHOPARENA_DEMO_DIR", "demo-out"))
DEMO_PRODUCTS = 20_000
DEMO_SEED = 42

console = Console()

DEMO_SEARCHES = [
    ("wireless earbuds", {}),
    ("waterproof backpack laptop", {"price": "500-1500", "service": ["COD"]}),
    ("non-stick frying pan", {"sort": "priceasc"}),
    ("yoga mat", {"price": "300-", "sort": "order"}),
]


def build_or_reuse_catalog() -> Path:
    catalog_dir = DEMO_DIR / "catalog"
    try:
        meta = read_meta(catalog_dir)
        if meta.n_products == DEMO_PRODUCTS and meta.seed == DEMO_SEED:
            console.print(f"reusing the demo catalogue in {catalog_dir} ({meta.n_products:,} products)")
            return catalog_dir
    except CatalogDirError:
        pass
    started = time.perf_counter()
    meta = build_synthetic(catalog_dir, DEMO_PRODUCTS, seed=DEMO_SEED, overwrite=True)
    console.print(
        f"built {catalog_dir}: {meta.n_products:,} products from {meta.n_shops:,} shops in "
        f"{time.perf_counter() - started:.1f}s (index {meta.index_bytes / 1e6:.1f} MB, store {meta.store_bytes / 1e6:.1f} MB)"
    )
    return catalog_dir


def show_searches(catalog_dir: Path) -> None:
    catalog = open_catalog(catalog_dir)
    try:
        for query, filters in DEMO_SEARCHES:
            started = time.perf_counter()
            hits = catalog.find_product(query, **filters)
            elapsed = (time.perf_counter() - started) * 1000
            shown = ", ".join(f"{k}={v}" for k, v in filters.items()) or "no filters"
            table = Table(title=f"find_product({query!r}) — {shown} — {elapsed:.2f} ms", title_justify="left")
            table.add_column("product_id")
            table.add_column("shop")
            table.add_column("title", max_width=60)
            table.add_column("price", justify="right")
            table.add_column("service")
            table.add_column("sold", justify="right")
            for hit in hits[:5]:
                table.add_row(
                    hit["product_id"],
                    hit["shop_id"],
                    hit["title"],
                    f"{hit['price']:,.2f}",
                    ", ".join(hit["service"]),
                    f"{hit['sold_count']:,}",
                )
            console.print(table)
    finally:
        catalog.close()


def main() -> None:
    console.print(Rule("shoparena demo · 1 · catalogue and search"))
    catalog_dir = build_or_reuse_catalog()
    show_searches(catalog_dir)
    console.print(
        f'\nTry it yourself: [bold].venv/bin/shoparena search {catalog_dir} "red dress" --service COD[/]'
    )


if __name__ == "__main__":
    main()
