"""Each find_product rule of SPEC §1 on its own, on a catalogue whose ranking is known."""

from __future__ import annotations

import pytest

from shoparena.index.request import SearchRequestError, parse_price

FIELDS = {"product_id", "shop_id", "title", "price", "service", "sold_count"}


def ids(hits):
    return [h["product_id"] for h in hits]


def all_pages(catalog, **kwargs):
    return [h for page in range(1, 6) for h in catalog.find_product(page=page, **kwargs)]


def test_returns_exactly_the_six_upstream_fields(lamp_catalog):
    hits = lamp_catalog.find_product("lamp")
    assert len(hits) == 10
    for hit in hits:
        assert set(hit) == FIELDS
        assert isinstance(hit["price"], float) and isinstance(hit["sold_count"], int)
        assert isinstance(hit["service"], list)


@pytest.mark.parametrize("page", [0, -1, 6, 100])
def test_pages_outside_one_to_five_are_empty(lamp_catalog, page):
    assert lamp_catalog.find_product("lamp", page=page) == []


def test_five_pages_of_ten_cover_the_top_fifty_without_overlap(lamp_catalog):
    pages = [ids(lamp_catalog.find_product("lamp", page=p)) for p in range(1, 6)]
    assert all(len(p) == 10 for p in pages)
    flat = [i for p in pages for i in p]
    assert len(set(flat)) == 50


def test_relevance_order_is_bm25(lamp_catalog):
    hits = lamp_catalog.find_product("lamp")
    assert set(ids(hits)) == {f"p{i:03d}" for i in range(10)}  # the strongest 'lamp lamp …' titles
    page2 = lamp_catalog.find_product("lamp", page=2)
    assert set(ids(page2)) == {f"p{i:03d}" for i in range(10, 20)}


def test_shop_filter_is_exact(lamp_catalog):
    hits = all_pages(lamp_catalog, q="lamp", shop_id="s1")
    assert hits and all(h["shop_id"] == "s1" for h in hits)
    assert all(h["shop_id"] != "s12" for h in all_pages(lamp_catalog, q="hose lamp", shop_id="s1"))
    assert ids(lamp_catalog.find_product("hose", shop_id="s1")) == []
    assert ids(lamp_catalog.find_product("hose", shop_id="s12")) == ["p900"]


def test_price_range_is_inclusive(lamp_catalog):
    hits = all_pages(lamp_catalog, q="lamp", price="500-600")
    prices = sorted(h["price"] for h in hits)
    assert prices[0] == 500.0 and prices[-1] == 600.0
    assert all(500 <= p <= 600 for p in prices)


def test_open_ended_price_range(lamp_catalog):
    hits = all_pages(lamp_catalog, q="lamp", price="900-")
    assert hits and all(h["price"] >= 900 for h in hits)
    assert max(h["price"] for h in hits) == 1000.0


def test_every_listed_service_is_required(lamp_catalog):
    hits = all_pages(lamp_catalog, q="lamp", service=["COD", "freeShipping"])
    assert hits and all({"COD", "freeShipping"} <= set(h["service"]) for h in hits)
    assert ids(all_pages(lamp_catalog, q="lamp", service="COD,freeShipping")) == ids(hits)
    assert all(
        "official" in h["service"] for h in all_pages(lamp_catalog, q="lamp", service=["official", "COD"])
    )


def test_sort_reorders_only_the_top_fifty(lamp_catalog):
    top50 = {h["product_id"] for h in all_pages(lamp_catalog, q="lamp")}
    cheap = all_pages(lamp_catalog, q="lamp", sort="priceasc")
    assert {h["product_id"] for h in cheap} == top50
    assert "p901" not in top50  # the cheapest lamp ranks below 50 on relevance, so sorting never sees it
    assert [h["price"] for h in cheap] == sorted(h["price"] for h in cheap)
    dear = all_pages(lamp_catalog, q="lamp", sort="pricedesc")
    assert [h["price"] for h in dear] == sorted((h["price"] for h in dear), reverse=True)
    popular = all_pages(lamp_catalog, q="lamp", sort="order")
    assert [h["sold_count"] for h in popular] == sorted((h["sold_count"] for h in popular), reverse=True)
    assert {h["product_id"] for h in popular} == top50


def test_filters_combine(lamp_catalog):
    hits = all_pages(lamp_catalog, q="lamp", shop_id="s0", price="300-800", service=["COD"], sort="priceasc")
    assert hits
    for h in hits:
        assert h["shop_id"] == "s0" and 300 <= h["price"] <= 800 and "COD" in h["service"]


def test_sku_and_attribute_values_are_searchable(lamp_catalog):
    assert set(ids(all_pages(lamp_catalog, q="brass"))) == {f"p{i:03d}" for i in range(35, 70, 7)}
    assert set(ids(all_pages(lamp_catalog, q="red"))) == {f"p{i:03d}" for i in [*range(30, 70, 5), 900]}


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("cheap", "expected"),
        ("10-abc", "numbers"),
        ("500-100", "below the lower"),
        ("-5-10", "numbers"),
        ("nan-", "finite"),
    ],
)
def test_malformed_price_is_a_clear_error(lamp_catalog, price, message):
    with pytest.raises(SearchRequestError, match=message):
        lamp_catalog.find_product("lamp", price=price)


def test_unknown_sort_and_service_are_clear_errors(lamp_catalog):
    with pytest.raises(SearchRequestError, match="sort"):
        lamp_catalog.find_product("lamp", sort="cheapest")
    with pytest.raises(SearchRequestError, match="unknown flag"):
        lamp_catalog.find_product("lamp", service=["teleport"])
    assert lamp_catalog.find_product("lamp", service=["cod"]) == lamp_catalog.find_product(
        "lamp", service=["COD"]
    )


def test_price_parser_forms():
    assert parse_price("100-500").model_dump() == {"low": 100, "high": 500}
    assert parse_price("100-").model_dump() == {"low": 100, "high": None}
    assert parse_price("-500").model_dump() == {"low": 0, "high": 500}
    assert parse_price(None) is None and parse_price(" ") is None


def test_lookup_by_id(lamp_catalog):
    product = lamp_catalog.get_product("p005")
    assert product is not None and product.price == 950.0
    assert lamp_catalog.get_product("nope") is None
    assert set(lamp_catalog.get_products(["p001", "zzz", "p002"])) == {"p001", "p002"}
    assert len(lamp_catalog) == 72


def test_one_catalogue_can_be_opened_many_times_in_one_process(small_catalog_dir, small_catalog):
    from shoparena.index.catalog_dir import open_catalog

    first = open_catalog(small_catalog_dir)
    second = open_catalog(small_catalog_dir)
    first.close()
    first.close()  # closing twice is harmless
    assert second.find_product("backpack") == small_catalog.find_product("backpack")
    second.close()
    assert len(small_catalog) > 0  # the session's own handle still works
