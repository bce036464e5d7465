"""Pages are a pure function of the catalogue: the index's segment layout never shows in them.

Two validators build one catalogue on machines with different cores (writer threads) and batching
(commits), so their indexes have different segments. Before ties were broken by catalogue order,
two such builds of a 20,000-product catalogue returned different pages for 17 of 20 queries.
"""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.catalog.models import SERVICES
from shoparena.index.catalog_dir import IndexLayout, build_from_file, build_synthetic, open_catalog
from shoparena.index.request import MAX_HITS, SORTS, SearchRequest

N_PRODUCTS = 3000
SEED = 5
LAYOUTS = {
    "one-writer-one-commit": (1, IndexLayout(writer_threads=1)),
    "one-writer-many-commits": (1, IndexLayout(writer_threads=1, commit_every=450)),
    "two-writers-two-generators": (2, IndexLayout(writer_threads=2)),
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("layouts")
    catalogs = {}
    for name, (workers, layout) in LAYOUTS.items():
        build_synthetic(root / name, N_PRODUCTS, seed=SEED, workers=workers, layout=layout)
        catalogs[name] = open_catalog(root / name)
    yield catalogs
    for catalog in catalogs.values():
        catalog.close()


@pytest.fixture(scope="module")
def vocabulary(builds):
    catalog = next(iter(builds.values()))
    words = set()
    for ordinal in range(0, N_PRODUCTS, 7):
        product = catalog.store.dict_by_ord(ordinal)
        words.update(product["title"].lower().split())
        words.update(v for values in product["attributes"].values() for v in values)
    return sorted(words)


def test_the_builds_really_differ_in_layout(builds):
    counts = {name: catalog.segment_count for name, catalog in builds.items()}
    assert len(set(counts.values())) >= 2 and max(counts.values()) >= 3, counts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_layout_returns_the_same_pages(builds, vocabulary, data):
    words = data.draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=8), label="words")
    sort = data.draw(st.sampled_from([None, *SORTS]), label="sort")
    services = data.draw(st.lists(st.sampled_from(SERVICES), max_size=2, unique=True), label="service")
    low = data.draw(st.one_of(st.none(), st.integers(0, 2000)), label="low")
    price = None if low is None else data.draw(st.sampled_from([f"{low}-", f"{low}-{low * 3 + 50}"]))
    reference = builds["one-writer-one-commit"]
    shop_id = None
    if data.draw(st.booleans(), label="use_shop"):
        ordinal = data.draw(st.integers(0, N_PRODUCTS - 1), label="shop_of")
        shop_id = reference.store.dict_by_ord(ordinal)["shop_id"]
    query = " ".join(words)
    request = SearchRequest.build(q=query, shop_id=shop_id, price=price, service=services, sort=sort)
    expected_hits = reference.filtered_hits(request)
    for name, catalog in builds.items():
        # the same hits with the same score bits, in the same order, for every layout
        assert catalog.filtered_hits(request) == expected_hits, name
    top = [reference.store.dict_by_ord(hit["ord"])["product_id"] for hit in expected_hits]
    for page in range(1, 6):
        args = {
            "q": query,
            "page": page,
            "shop_id": shop_id,
            "price": price,
            "service": services,
            "sort": sort,
        }
        pages = {name: catalog.find_product(**args) for name, catalog in builds.items()}
        assert all(p == pages["one-writer-one-commit"] for p in pages.values()), (args, pages)
        if sort is None:  # a relevance page, cut on its own, is that slice of the top 50
            got = [hit["product_id"] for hit in pages["one-writer-one-commit"]]
            assert got == top[(page - 1) * 10 : page * 10]


@pytest.mark.parametrize(
    "layout", [IndexLayout(writer_threads=2), IndexLayout(writer_threads=1, commit_every=60)], ids=str
)
def test_ties_go_by_catalogue_order_across_segments(tmp_path, layout):
    """134 identical listings (all tied) among others, in several segments: pages are the first 50 by order."""
    lines = []
    for i in range(400):
        title = "brass desk lamp" if i % 3 == 0 else f"garden hose {i}"
        product = {"product_id": f"p{i:04d}", "shop_id": f"s{i % 4}", "title": title, "price": float(i % 50)}
        lines.append(orjson.dumps(product))
    source = tmp_path / "ties.jsonl"
    source.write_bytes(b"\n".join(lines))
    build_from_file(tmp_path / "cat", source, layout=layout)
    catalog = open_catalog(tmp_path / "cat")
    try:
        assert catalog.segment_count >= 2
        tied = [f"p{i:04d}" for i in range(0, 400, 3)]
        got = [h["product_id"] for page in range(1, 6) for h in catalog.find_product("desk lamp", page=page)]
        assert got == tied[:MAX_HITS]
        by_price = [h["product_id"] for h in catalog.find_product("lamp", sort="priceasc")]
        top = tied[:MAX_HITS]
        assert by_price == sorted(top, key=lambda pid: (int(pid[1:]) % 50, top.index(pid)))[:10]
    finally:
        catalog.close()


def _sum_in_clause_order(explanation: dict) -> np.float32:
    """A document's score rebuilt from the engine's explanation: each term's score, added in order."""
    if explanation["description"].startswith("BooleanClause"):
        total = np.float32(0)
        for part in explanation["details"]:
            total = np.float32(total + _sum_in_clause_order(part))
        return total
    return np.float32(explanation["value"])


def test_a_score_is_its_term_scores_added_in_clause_order(builds, vocabulary):
    """What makes scores the same bits in every layout: BM25 statistics are index-wide and the engine
    adds term scores in clause order. If an engine upgrade changes either, this fails first."""
    import random

    import tantivy

    rng = random.Random(3)
    many = builds["one-writer-many-commits"]
    single = builds["one-writer-one-commit"]
    checked = 0
    for _ in range(40):
        # distinct terms only: a repeated word is a boosted clause, whose explanation rounds differently
        query_text = " ".join(rng.sample(vocabulary, rng.randint(3, 8)))
        if len(set(many.analyze(query_text))) != len(many.analyze(query_text)):
            continue
        text = many.text_query(query_text)
        cod = tantivy.Query.term_query(many._schema, "service", "COD")
        filtered = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text), (tantivy.Occur.Must, tantivy.Query.const_score_query(cod, 0.0))]
        )
        for engine_query in (text, filtered):
            # private engine access on purpose: this pins a property of the engine itself
            for score, address in many._searcher.search(engine_query, limit=30, count=False).hits:
                explanation = json.loads(engine_query.explain(many._searcher, address).to_json())
                assert np.float32(score) == _sum_in_clause_order(explanation)
                checked += 1
        same = {h["ord"]: h["score"] for h in many.filtered_hits(SearchRequest(q=query_text), limit=200)}
        other = {h["ord"]: h["score"] for h in single.filtered_hits(SearchRequest(q=query_text), limit=200)}
        assert all(other[o] == s for o, s in same.items() if o in other)
    assert checked > 500
