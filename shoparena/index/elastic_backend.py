"""Elasticsearch / OpenSearch catalogue backend (SPEC §12 scale-out), same interface as the embedded one.

The query is a `match` query (analysed text, never query-string syntax, so nothing in `q` can inject
operators) with the filters in the bool `filter` context, which does not score: the top 50 of the
filtered query are the first 50 filter-passing hits in BM25 order, as upstream walks them, ties broken
by catalogue order (`ord`). Sorting and paging then reuse the exact code of the embedded backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import orjson

from shoparena.catalog.models import Product, build_contents
from shoparena.index.product_store import ProductStore
from shoparena.index.request import MAX_HITS, SearchRequest, sort_and_page

ES_CONFIG_FILE = "es.json"
TIE_RULE = [{"_score": "desc"}, {"ord": "asc"}]
"""Equal scores go by catalogue order, as in the embedded engine: pages never depend on shards or
segments. A sort (unlike the engine's heap) cuts the top 50 exactly at the keys, ties included."""
HIT_FIELDS = ["ord", "product_id", "shop_id", "title", "price", "service", "sold_count"]

INDEX_SETTINGS = {
    "settings": {
        "number_of_shards": 1,
        "analysis": {
            "analyzer": {
                "shoparena_en": {
                    "type": "custom",
                    "tokenizer": "standard",
                    "filter": ["lowercase", "shoparena_stop", "porter_stem"],
                }
            },
            "filter": {"shoparena_stop": {"type": "stop", "stopwords": "_english_"}},
        },
    },
    "mappings": {
        "dynamic": False,
        "properties": {
            "contents": {"type": "text", "analyzer": "shoparena_en"},
            "ord": {"type": "long"},
            "product_id": {"type": "keyword"},
            "shop_id": {"type": "keyword"},
            "title": {"type": "text", "index": False},
            "price": {"type": "double"},
            "service": {"type": "keyword"},
            "sold_count": {"type": "long"},
        },
    },
}


def es_search_body(request: SearchRequest) -> dict:
    """The search body for one find_product request (pure, so it is tested without a server)."""
    filters: list[dict] = []
    if request.shop_id is not None:
        filters.append({"term": {"shop_id": request.shop_id}})
    if request.price is not None:
        bounds = {"gte": request.price.low}
        if request.price.high is not None:
            bounds["lte"] = request.price.high
        filters.append({"range": {"price": bounds}})
    filters.extend({"term": {"service": flag}} for flag in request.service)
    return {
        "query": {
            "bool": {
                "must": [{"match": {"contents": {"query": request.q, "operator": "or"}}}],
                "filter": filters,
            }
        },
        "size": MAX_HITS,
        "sort": TIE_RULE,
        "_source": HIT_FIELDS,
        "track_total_hits": False,
    }


def _client(url: str):
    try:
        from elasticsearch import Elasticsearch
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise RuntimeError(
            "the Elasticsearch backend needs the 'es' extra: pip install 'shoparena[es]'"
        ) from exc
    return Elasticsearch(url, request_timeout=30)


class ElasticCatalog:
    """find_product and lookups over an Elasticsearch/OpenSearch index (implements `CatalogBackend`)."""

    def __init__(self, url: str, index: str, store: ProductStore | None = None, client=None):
        if not url or not index:
            raise ValueError("the Elasticsearch backend needs a server URL and an index name")
        self.url, self.index = url, index
        self._es = client if client is not None else _client(url)
        self.store = store

    def __len__(self) -> int:
        return int(self._es.count(index=self.index)["count"])

    def find_product(
        self,
        q: str,
        page: int = 1,
        shop_id: str | None = None,
        price: str | None = None,
        sort: str | None = None,
        service: str | Sequence[str] | None = None,
    ) -> list[dict]:
        request = SearchRequest.build(
            q=q, page=page, shop_id=shop_id, price=price, sort=sort, service=service
        )
        if not request.page_in_range or not request.q.strip():
            return []
        response = self._es.search(index=self.index, body=es_search_body(request))
        hits = [hit["_source"] for hit in response["hits"]["hits"]]
        return [{k: h[k] for k in HIT_FIELDS if k != "ord"} for h in sort_and_page(hits, request)]

    def get_product(self, product_id: str) -> Product | None:
        return self.get_products([product_id]).get(str(product_id))

    def get_products(self, product_ids: Iterable[str]) -> dict[str, Product]:
        ids = [str(p) for p in product_ids]
        if self.store is not None:
            return self.store.get_many(ids)
        if not ids:
            return {}
        response = self._es.mget(index=self.index, ids=ids)
        found = {}
        for doc in response["docs"]:
            if doc.get("found"):
                source = doc["_source"].get("product") or doc["_source"]
                found[doc["_id"]] = Product.model_validate(source)
        return found

    def products_in_shop(self, shop_id: str, limit: int = 1000) -> list[dict]:
        body = {
            "query": {"term": {"shop_id": str(shop_id)}},
            "size": limit,
            "sort": [{"ord": "asc"}],
            "_source": ["ord"],
        }
        response = self._es.search(index=self.index, body=body)
        ords = [hit["_source"]["ord"] for hit in response["hits"]["hits"]]
        if self.store is not None:
            return [self.store.dict_by_ord(o) for o in ords]
        ids = [hit["_id"] for hit in response["hits"]["hits"]]
        return [p.model_dump() for p in self.get_products(ids).values()]

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self._es.close()


def push_catalog(
    catalog_dir: Path,
    url: str,
    index: str,
    batch: int = 2000,
    client=None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Bulk-load a built catalogue's products into an index and remember it in `<dir>/es.json`."""
    from elasticsearch import helpers

    from shoparena.index.catalog_dir import STORE_DIR

    es = client if client is not None else _client(url)
    if es.indices.exists(index=index):
        es.indices.delete(index=index)
    es.indices.create(index=index, **INDEX_SETTINGS)
    store = ProductStore(Path(catalog_dir) / STORE_DIR)

    def actions():
        for ordinal, product in enumerate(store.iter_dicts()):
            yield {
                "_index": index,
                "_id": product["product_id"],
                "_source": {
                    "contents": build_contents(
                        product["title"], product["sku_options"], product["attributes"]
                    ),
                    "ord": ordinal,
                    "product_id": product["product_id"],
                    "shop_id": product["shop_id"],
                    "title": product["title"],
                    "price": product["price"],
                    "service": product["service"],
                    "sold_count": product["sold_count"],
                },
            }

    count = 0
    try:
        for ok, item in helpers.streaming_bulk(es, actions(), chunk_size=batch, raise_on_error=False):
            if not ok:
                raise RuntimeError(f"Elasticsearch refused a product: {item}")
            count += 1
            if progress is not None:
                progress(1)
    finally:
        store.close()
    es.indices.refresh(index=index)
    (Path(catalog_dir) / ES_CONFIG_FILE).write_bytes(orjson.dumps({"url": url, "index": index}))
    return count
