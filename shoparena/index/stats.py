"""Summary statistics of a built catalogue, computed in one streaming pass over the product store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from shoparena.index.catalog_dir import CatalogMeta, open_product_store

SAMPLE_LIMIT = 200_000  # prices are sampled past this so stats stay bounded on 2.7M products


def catalog_stats(path: Path, meta: CatalogMeta) -> dict:
    store = open_product_store(Path(path))
    categories: Counter = Counter()
    services: Counter = Counter()
    prices: list[float] = []
    n = 0
    step = max(1, len(store) // SAMPLE_LIMIT)
    try:
        for i, product in enumerate(store.iter_dicts()):
            n += 1
            if i % step:
                continue
            categories[product["category"]] += 1
            services.update(product["service"])
            prices.append(product["price"])
    finally:
        store.close()
    sampled = max(1, len(prices))
    data = meta.model_dump()
    data["price_percentiles"] = (
        [float(x) for x in np.percentile(prices, [10, 50, 90])] if prices else [0, 0, 0]
    )
    data["service_share"] = {
        k: services[k] / sampled for k in ("official", "freeShipping", "COD", "flashsale")
    }
    data["top_categories"] = [(c, k * step) for c, k in categories.most_common(20)]
    data["n_categories_seen"] = len(categories)
    return data
