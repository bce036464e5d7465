"""The Elasticsearch/OpenSearch backend: query construction always; live behaviour when a server is given."""

from __future__ import annotations

import os

import pytest

from shoparena.index.elastic_backend import es_search_body
from shoparena.index.request import MAX_HITS, SearchRequest


def test_query_is_analysed_text_with_non_scoring_filters():
    body = es_search_body(
        SearchRequest.build(q='lamp AND (desk) "x', shop_id="s1", price="10-", service=["COD", "official"])
    )
    must = body["query"]["bool"]["must"]
    assert must == [{"match": {"contents": {"query": 'lamp AND (desk) "x', "operator": "or"}}}]
    filters = body["query"]["bool"]["filter"]
    assert {"term": {"shop_id": "s1"}} in filters
    assert {"range": {"price": {"gte": 10.0}}} in filters
    assert {"term": {"service": "COD"}} in filters and {"term": {"service": "official"}} in filters
    assert body["size"] == MAX_HITS
    assert body["sort"] == [{"_score": "desc"}, {"ord": "asc"}]  # ties by catalogue order, as embedded


def test_closed_price_range_has_both_bounds():
    body = es_search_body(SearchRequest.build(q="lamp", price="10-20"))
    assert body["query"]["bool"]["filter"] == [{"range": {"price": {"gte": 10.0, "lte": 20.0}}}]


ES_URL = os.environ.get("SHOPARENA_ES_URL")


@pytest.mark.es
@pytest.mark.skipif(not ES_URL, reason="set SHOPARENA_ES_URL to run against a live Elasticsearch/OpenSearch")
def test_live_server_follows_the_same_rules(small_catalog_dir, small_catalog):
    from shoparena.index.catalog_dir import open_catalog
    from shoparena.index.elastic_backend import push_catalog

    push_catalog(small_catalog_dir, ES_URL, "shoparena-test")
    es = open_catalog(small_catalog_dir, backend="elasticsearch")
    try:
        assert len(es) == len(small_catalog)
        hits = es.find_product("waterproof backpack", price="100-2000", service=["COD"], sort="priceasc")
        assert hits and all(100 <= h["price"] <= 2000 and "COD" in h["service"] for h in hits)
        assert [h["price"] for h in hits] == sorted(h["price"] for h in hits)
        assert es.find_product("backpack", page=6) == []
        ours = {h["product_id"] for h in small_catalog.find_product("wireless earbuds")}
        theirs = {h["product_id"] for h in es.find_product("wireless earbuds")}
        assert len(ours & theirs) >= 5  # same BM25 recipe; analyser details may reorder the tail
    finally:
        es.close()
