"""Elasticsearch / OpenSearch catalogue backend (SPEC §12 scale-out), same interface as the embedded one.

The query is a `match` query (analysed text, never query-string syntax, so nothing in `q` can inject
operators) with the filters in the bool `filter` context, which does not score: the top 50 of the
filtered query are the first 50 filter-passing hits in BM25 order, as upstream walks them, ties broken
by catalogue order (`ord`). Sorting and paging then reuse the exact code of the embedded backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import orjson

from shoparena.catalog.models import Product, build_contents
from shoparena.index.catalog_files import ES_CONFIG_FILE, STORE_DIR
from shoparena.index.product_store import ProductStore
from shoparena.index.request import MAX_HITS, SearchRequest, sort_and_page

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


class ElasticBackendError(RuntimeError):
    """The server cannot be reached or refused a request; the message names the URL and says why."""


def _reason(exc: Exception) -> str:
    """The innermost cause of a transport error, not the client's three nested reprs of it."""
    text = str(getattr(exc, "message", None) or exc)
    errno = re.search(r"\[Errno -?\d+\] ([^)\]]+)", text)
    if errno:
        return errno.group(1).strip()
    status = getattr(getattr(exc, "meta", None), "status", None)
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        text = f"{error.get('type')}: {error.get('reason')}"
    text = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"HTTP {status}: {text}" if isinstance(status, int) and status >= 400 else text


@contextmanager
def talking_to(url: str) -> Iterator[None]:
    """Turn the client's exceptions (with tracebacks three retries deep) into one `ElasticBackendError`."""
    from elastic_transport import ApiError, TransportError

    try:
        yield
    except ApiError as exc:  # the server answered, with an error
        raise ElasticBackendError(f"Elasticsearch at {url}: {_reason(exc)}") from exc
    except TransportError as exc:  # no answer: refused, timed out, TLS, DNS
        raise ElasticBackendError(
            f"cannot reach Elasticsearch at {url}: {_reason(exc)}; "
            "check that the server is running and the URL (scheme, host, port) is right"
        ) from exc


def _client(url: str):
    try:
        from elasticsearch import Elasticsearch
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ElasticBackendError(
            "the Elasticsearch backend needs the 'es' extra: pip install 'shoparena[es]'"
        ) from exc
    try:
        return Elasticsearch(url, request_timeout=30)
    except ValueError as exc:  # no scheme or port: the client says which
        raise ElasticBackendError(f"Elasticsearch URL {url!r}: {exc}") from exc


def connect(url: str):
    """A client that has been answered by the server at `url` (so a wrong URL fails here, once)."""
    es = _client(url)
    try:
        with talking_to(url):
            es.info()
    except BaseException:
        es.close()
        raise
    return es


class ElasticCatalog:
    """find_product and lookups over an Elasticsearch/OpenSearch index (implements `CatalogBackend`)."""

    def __init__(self, url: str, index: str, store: ProductStore | None = None, client=None):
        if not url or not index:
            raise ValueError("the Elasticsearch backend needs a server URL and an index name")
        self.url, self.index = url, index
        self._es = client if client is not None else _client(url)
        self.store = store

    @classmethod
    def open(cls, url: str, index: str, store: ProductStore | None = None) -> ElasticCatalog:
        """Connect and check that `index` is there, so a wrong URL or index fails at once, not on the
        first search (or never, for lookups, which the local store answers)."""
        es = connect(url)
        try:
            with talking_to(url):
                found = es.indices.exists(index=index)
            if not found:
                raise ElasticBackendError(
                    f"Elasticsearch at {url} has no index {index!r}; load it with `shoparena catalog push-es`"
                )
        except BaseException:
            es.close()
            raise
        return cls(url, index, store=store, client=es)

    def __len__(self) -> int:
        with talking_to(self.url):
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
        with talking_to(self.url):
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
        with talking_to(self.url):
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
        with talking_to(self.url):
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
    """Bulk-load a built catalogue's products into an index and remember it in `<dir>/es.json`.

    Pass a `connect`ed client to learn that the server answers before showing progress; any failure
    to talk to it is an `ElasticBackendError` naming `url`.
    """
    from elasticsearch import helpers

    es = client if client is not None else connect(url)
    with talking_to(url):
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
        with talking_to(url):
            for ok, item in helpers.streaming_bulk(es, actions(), chunk_size=batch, raise_on_error=False):
                if not ok:
                    raise ElasticBackendError(f"Elasticsearch at {url} refused a product: {item}")
                count += 1
                if progress is not None:
                    progress(1)
            es.indices.refresh(index=index)
    finally:
        store.close()
    (Path(catalog_dir) / ES_CONFIG_FILE).write_bytes(orjson.dumps({"url": url, "index": index}))
    return count
