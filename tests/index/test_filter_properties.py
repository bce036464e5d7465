"""Property: engine-side filtering equals upstream's walk — BM25 hits in order, keep those that pass."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.catalog.models import SERVICES
from shoparena.index.request import MAX_HITS, SearchRequest

WORDS = [
    "bag",
    "waterproof",
    "shoes",
    "black",
    "cotton",
    "pan",
    "steel",
    "usb-c",
    "cable",
    "mat",
    "yoga",
    "dress",
    "coffee",
    "helmet",
    "toner",
    "baby",
    "bottle",
    "speaker",
    "charger",
    "rack",
]


def reference(catalog, request: SearchRequest) -> list[int]:
    """Walk the unfiltered ranking and filter in Python, as upstream's server does."""
    unfiltered = catalog.filtered_hits(SearchRequest(q=request.q), limit=len(catalog))
    kept = []
    for hit in unfiltered:
        product = catalog.store.dict_by_ord(hit["ord"])
        if request.shop_id is not None and product["shop_id"] != request.shop_id:
            continue
        if request.price is not None and not request.price.contains(product["price"]):
            continue
        if not set(request.service) <= set(product["service"]):
            continue
        kept.append(hit["ord"])
        if len(kept) == MAX_HITS:
            break
    return kept


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    low=st.one_of(st.none(), st.integers(0, 3000)),
    span=st.one_of(st.none(), st.integers(0, 5000)),
    services=st.lists(st.sampled_from(SERVICES), max_size=2, unique=True),
    use_shop=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_engine_filters_match_the_upstream_walk(small_catalog, words, low, span, services, use_shop, seed):
    shop_id = None
    if use_shop:
        shop_id = small_catalog.store.dict_by_ord(random.Random(seed).randrange(len(small_catalog)))[
            "shop_id"
        ]
    price = None if low is None else (f"{low}-" if span is None else f"{low}-{low + span}")
    request = SearchRequest.build(q=" ".join(words), shop_id=shop_id, price=price, service=services)
    engine = [h["ord"] for h in small_catalog.filtered_hits(request)]
    assert engine == reference(small_catalog, request)
