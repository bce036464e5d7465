"""Embedded BM25 catalogue search on tantivy, with filters evaluated inside the engine (SPEC §1).

Query text is analysed by the same analyser the index uses (simple tokenizer, lowercase, English
stop words, Porter stemming, like Lucene's English analyzer behind upstream's pyserini) and turned
into term queries directly, so query-syntax characters are just separators: they can never raise a
parse error or change the meaning. Repeated words weigh more, as in pyserini's bag-of-words query.
Filters are constant-score (zero) clauses, so the score order is the BM25 order of the text alone and
"the first 50 hits that pass the filters" is simply the engine's top 50 of the filtered query.

Pages are a pure function of the catalogue, never of the index's segment layout (which depends on
writer threads and commit batching, so it differs between machines): two validators must see the
same pages. The engine breaks score ties by segment and doc address; we break them by catalogue
order (`ord`), and the top-50 cut fetches past the 50th hit until it holds every hit tied with it.
That needs scores to be the same bits in every layout, which they are: BM25 statistics (IDF, average
length) are index-wide, so a term's score depends only on the document, and the engine adds a
document's term scores in clause order (float addition is not associative, so any other order would
leak the layout; tests/index/test_layout_independence.py checks both against the engine's own
explanation, so an engine upgrade that changes this fails there first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import tantivy

from shoparena.catalog.models import Product
from shoparena.index.product_store import ProductStore
from shoparena.index.request import MAX_HITS, PAGE_SIZE, SearchRequest, sort_and_page

ANALYZER_NAME = "shoparena_en"
MAX_QUERY_TERMS = 1024  # Lucene's default clause cap; a longer query keeps its first distinct terms
HIT_FIELDS = ("product_id", "shop_id", "title", "price", "service", "sold_count")
TIE_GROWTH = 4  # each refetch asks for this many times more; measured best of 2, 4, 8 at 100k


def make_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def make_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("contents", stored=False, tokenizer_name=ANALYZER_NAME, index_option="freq")
    builder.add_unsigned_field("ord", stored=False, indexed=False, fast=True)
    builder.add_float_field("price", stored=False, indexed=True, fast=True)
    builder.add_unsigned_field("sold_count", stored=False, indexed=False, fast=True)
    builder.add_text_field("shop_id", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("service", stored=False, tokenizer_name="raw", index_option="basic")
    return builder.build()


def open_tantivy_index(path: Path, create: bool = False) -> tantivy.Index:
    if create:  # opening one to read must not make an empty index where the catalogue has none
        path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(make_schema(), path=str(path), reuse=not create)
    index.register_tokenizer(ANALYZER_NAME, make_analyzer())
    return index


class TantivyCatalog:
    """A built catalogue directory opened for search and lookup (implements `CatalogBackend`)."""

    def __init__(self, index_path: Path, store: ProductStore):
        self._index = open_tantivy_index(index_path)
        self._schema = self._index.schema
        self._searcher = self._index.searcher()
        self._analyzer = make_analyzer()
        self.store = store

    def __len__(self) -> int:
        return len(self.store)

    @property
    def document_count(self) -> int:
        return self._searcher.num_docs

    @property
    def segment_count(self) -> int:
        """Index segments: a build artefact that must never show in results (see the module doc)."""
        return self._searcher.num_segments

    # -- query construction ----------------------------------------------------------------------
    def analyze(self, text: str) -> list[str]:
        """The index terms of `text`, in order (what a query or a document is matched by)."""
        return self._analyzer.analyze(text)

    def text_query(self, text: str) -> tantivy.Query | None:
        tokens = Counter(self.analyze(text))
        if not tokens:
            return None
        clauses = []
        for token, count in list(tokens.items())[:MAX_QUERY_TERMS]:
            term = tantivy.Query.term_query(self._schema, "contents", token)
            if count > 1:
                term = tantivy.Query.boost_query(term, float(count))
            clauses.append((tantivy.Occur.Should, term))
        return tantivy.Query.boolean_query(clauses)

    def _filters(self, request: SearchRequest) -> list[tantivy.Query]:
        filters = []
        if request.shop_id is not None:
            filters.append(tantivy.Query.term_query(self._schema, "shop_id", request.shop_id))
        if request.price is not None:
            filters.append(
                tantivy.Query.range_query(
                    self._schema, "price", tantivy.FieldType.Float, request.price.low, request.price.high
                )
            )
        for flag in request.service:
            filters.append(tantivy.Query.term_query(self._schema, "service", flag))
        return filters

    def filtered_hits(self, request: SearchRequest, limit: int = MAX_HITS) -> list[dict]:
        """The first ≤`limit` (50) hits in BM25 order that pass every filter, with sort keys, before paging."""
        ranked, addresses = self._ranked(request, limit)
        if not ranked:
            return []
        kept = [addresses[i] for _, _, i in ranked]
        prices = self._searcher.fast_field_values("price", kept)
        sold = self._searcher.fast_field_values("sold_count", kept)
        return [
            {"ord": o, "price": p, "sold_count": s, "score": -negative}
            for (negative, o, _), p, s in zip(ranked, prices, sold, strict=True)
        ]

    def _ranked(self, request: SearchRequest, limit: int) -> tuple[list[tuple[float, int, int]], list]:
        """`(-score, ord, i)` of the first ≤`limit` filtered hits in page order (score, then catalogue
        order), and the engine's addresses that `i` indexes. Plain tuples: they sort in C."""
        text = self.text_query(request.q)
        if text is None:
            return [], []
        filters = self._filters(request)
        if filters:
            clauses = [(tantivy.Occur.Must, text)]
            clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]
            query = tantivy.Query.boolean_query(clauses)
        else:
            query = text
        scored = self._top_with_ties(query, limit)
        addresses = [address for _, address in scored]
        ords = self._searcher.fast_field_values("ord", addresses) if addresses else []
        ranked = sorted(zip([-score for score, _ in scored], ords, range(len(ords)), strict=True))
        return ranked[:limit], addresses

    def _top_with_ties(self, query: tantivy.Query, limit: int) -> list[tuple[float, object]]:
        """The engine's top `limit` hits plus every further hit tied with the last of them.

        Which of several tied hits the engine keeps at its cut depends on the segment layout, so the
        fetch goes on (growing geometrically) until the last hit fetched scores below the `limit`-th.
        """
        fetch = 2 * limit + 4  # ties run past the 50th hit in ~75% of queries, past the 100th in <3%
        while True:
            hits = self._searcher.search(query, limit=fetch, count=False).hits
            if len(hits) < fetch or hits[-1][0] < hits[limit - 1][0]:
                return hits
            fetch *= TIE_GROWTH

    # -- CatalogBackend ---------------------------------------------------------------------------
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
        return self.search(request)

    def search(self, request: SearchRequest) -> list[dict]:
        if not request.page_in_range:
            return []
        end = request.page * PAGE_SIZE
        # relevance order: page p is ranks 10p-9..10p of the total order, which only the top 10p
        # (with every hit tied at 10p) decides; a sort reorders all 50, so it needs the full cut
        ranked, addresses = self._ranked(request, end if request.sort is None else MAX_HITS)
        if not ranked:
            return []
        if request.sort is None:
            ords = [o for _, o, _ in ranked[end - PAGE_SIZE : end]]
        else:  # one sort key, read for the ≤50 hits only
            key = "sold_count" if request.sort == "order" else "price"
            values = self._searcher.fast_field_values(key, [addresses[i] for _, _, i in ranked])
            hits = [{"ord": o, key: v} for (_, o, _), v in zip(ranked, values, strict=True)]
            ords = [hit["ord"] for hit in sort_and_page(hits, request)]
        rows = []
        for ordinal in ords:
            product = self.store.dict_by_ord(ordinal)
            rows.append({field: product[field] for field in HIT_FIELDS})
        return rows

    def products_in_shop(self, shop_id: str, limit: int = 1000) -> list[dict]:
        """Up to `limit` full product records of one shop (for shop/voucher task generation)."""
        query = tantivy.Query.term_query(self._schema, "shop_id", str(shop_id))
        # the first `limit` in catalogue order: a score cut would pick among ties by segment layout
        result = self._searcher.search(
            query, limit=limit, count=False, order_by_field="ord", order=tantivy.Order.Asc
        )
        return [self.store.dict_by_ord(o) for o, _ in result.hits]

    def get_product(self, product_id: str) -> Product | None:
        return self.store.get(str(product_id))

    def get_products(self, product_ids: Iterable[str]) -> dict[str, Product]:
        return self.store.get_many(str(p) for p in product_ids)

    def close(self) -> None:
        self.store.close()
