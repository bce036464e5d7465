"""Every tool's behaviour, through Episode.call, on a real generated catalogue."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoparena.harness import Episode
from shoparena.problems.models import Problem, Voucher


def ok(observation):
    assert observation.ok, observation.text
    return observation.result


def error(observation):
    assert not observation.ok, observation.text
    assert observation.text.startswith("Error: ")
    return observation.error


# -- find_product ----------------------------------------------------------------------------------
def test_find_product_is_the_backend_search(episode, backend, rich_product):
    q = " ".join(rich_product["title"].split()[:3])
    result = ok(episode.call("find_product", {"q": q, "sort": "priceasc", "price": "10-"}))
    assert result == backend.find_product(q, page=1, price="10-", sort="priceasc")
    assert result and all(
        set(hit) == {"product_id", "shop_id", "title", "price", "service", "sold_count"} for hit in result
    )
    assert [hit["price"] for hit in result] == sorted(hit["price"] for hit in result)


def test_find_product_filters_and_pages(episode, rich_product):
    q = rich_product["title"]
    in_shop = ok(episode.call("find_product", {"q": q, "shop_id": rich_product["shop_id"]}))
    assert in_shop and {hit["shop_id"] for hit in in_shop} == {rich_product["shop_id"]}
    assert rich_product["product_id"] in {hit["product_id"] for hit in in_shop}
    with_service = ok(episode.call("find_product", {"q": q, "service": ["COD", "freeShipping"]}))
    assert all({"COD", "freeShipping"} <= set(hit["service"]) for hit in with_service)
    assert ok(episode.call("find_product", {"q": q, "page": 6})) == []
    assert ok(episode.call("find_product", {"q": q, "page": "2"})) == ok(
        episode.call("find_product", {"q": q, "page": 2})
    )


def test_find_product_upstream_default_values_mean_no_filter(episode, rich_product):
    q = rich_product["title"]
    plain = ok(episode.call("find_product", {"q": q}))
    assert ok(episode.call("find_product", {"q": q, "sort": "default", "service": "default"})) == plain


def test_find_product_bad_filters_are_error_observations(episode):
    assert "price" in error(episode.call("find_product", {"q": "blocks", "price": "cheap"}))
    assert "unknown flag" in error(episode.call("find_product", {"q": "blocks", "service": "teleport"}))
    assert "sort" in error(episode.call("find_product", {"q": "blocks", "sort": "random"}))


# -- view_product_information ----------------------------------------------------------------------
def test_view_product_information_shape_order_and_missing(episode, products):
    a, b = products[10], products[20]
    result = ok(
        episode.call(
            "view_product_information",
            {"product_ids": f"{b['product_id']}, nope ,{a['product_id']},{b['product_id']}"},
        )
    )
    assert [info["product_id"] for info in result] == [b["product_id"], a["product_id"]]
    assert set(result[0]) == {"product_id", "short_description", "description", "sku_options", "attributes"}
    assert result[1]["attributes"] == a["attributes"] and result[1]["sku_options"] == a["sku_options"]
    assert result[1]["description"] == a["description"]
    as_list = ok(episode.call("view_product_information", {"product_ids": [a["product_id"]]}))
    assert as_list == result[1:]
    assert ok(episode.call("view_product_information", {"product_ids": "nope"})) == []
    assert "empty" in error(episode.call("view_product_information", {"product_ids": " , "}))


# -- check_product_match ---------------------------------------------------------------------------
def test_check_product_match_sources_and_case(episode, rich_product):
    key, values = next(iter(rich_product["attributes"].items()))
    sku_value = next(iter(rich_product["sku_options"]["1"].values()))
    description_word = "voucher"  # every generated description ends with a review-for-voucher line
    assert description_word in rich_product["description"].lower()
    requirements = {
        key: values[0].upper(),  # the attribute's own values, case-insensitively
        "option": sku_value,  # a key the product lacks: matched against all attribute and SKU values
        "note": description_word,  # only in the description
        "colour": "ultraviolet plaid",
    }
    result = ok(
        episode.call(
            "check_product_match", {"product_id": rich_product["product_id"], "requirements": requirements}
        )
    )
    assert result["matches"] == [key, "option", "note"]
    assert result["mismatches"] == ["colour"]
    assert result["matched"] is False
    assert result["product_summary"]["product_id"] == rich_product["product_id"]
    assert result["product_summary"]["attributes"] == rich_product["attributes"]


def test_check_product_match_json_string_and_list_values(episode, rich_product):
    key, values = next((k, v) for k, v in rich_product["attributes"].items())
    matched = ok(
        episode.call(
            "check_product_match",
            {"product_id": rich_product["product_id"], "requirements": json.dumps({key: values})},
        )
    )
    assert matched["matched"] is True and matched["matches"] == [key]
    half = ok(
        episode.call(
            "check_product_match",
            {"product_id": rich_product["product_id"], "requirements": {key: [values[0], "zzqx"]}},
        )
    )
    assert half["matched"] is False and half["mismatches"] == [key]


def test_check_product_match_errors(episode, rich_product):
    pid = rich_product["product_id"]
    assert "not in the catalogue" in error(
        episode.call("check_product_match", {"product_id": "nope", "requirements": {"a": "b"}})
    )
    assert "empty" in error(episode.call("check_product_match", {"product_id": pid, "requirements": "{}"}))
    assert "not valid JSON" in error(
        episode.call("check_product_match", {"product_id": pid, "requirements": "{color: red}"})
    )
    assert "JSON object" in error(
        episode.call("check_product_match", {"product_id": pid, "requirements": '["red"]'})
    )
    assert "'size'" in error(
        episode.call("check_product_match", {"product_id": pid, "requirements": {"size": {"a": 1}}})
    )


# -- find_products_in_same_shop --------------------------------------------------------------------
class SpyBackend:
    """The real backend, with every find_product request recorded."""

    def __init__(self, backend):
        self.backend = backend
        self.requests: list[dict] = []

    def find_product(self, **request):
        self.requests.append(request)
        return self.backend.find_product(**request)

    def __getattr__(self, name):
        return getattr(self.backend, name)


def _shop_with_products(backend, products, count):
    shop_ids = dict.fromkeys(p["shop_id"] for p in products)
    for shop_id in shop_ids:
        items = backend.products_in_shop(shop_id, limit=50)
        if len(items) >= count:
            return shop_id, items[:count]
    raise AssertionError("no shop with enough products")


def test_same_shop_finds_one_shop_in_input_order(episode, backend, products):
    _, items = _shop_with_products(backend, products, 3)
    specs = [{"q": item["title"]} for item in items]
    result = ok(episode.call("find_products_in_same_shop", {"product_queries": specs}))
    assert result["found"] is True
    assert len(result["products"]) == 3
    assert {p["shop_id"] for p in result["products"]} == {result["shop_id"]}
    assert 1 <= result["shops_tried"] <= 10
    assert all(set(p) == {"product_id", "title", "price", "shop_id"} for p in result["products"])
    # The first product is the shop's first hit for the first spec; each other one is the shop's best
    # hit for its own spec, so the order follows the input.
    first_hits = backend.find_product(specs[0]["q"], page=1)
    first = next(hit for hit in first_hits if hit["shop_id"] == result["shop_id"])
    assert result["products"][0]["product_id"] == first["product_id"]
    for spec, product in zip(specs[1:], result["products"][1:], strict=True):
        best = backend.find_product(spec["q"], page=1, shop_id=result["shop_id"])
        assert product["product_id"] == best[0]["product_id"]


def test_same_shop_relaxes_then_gives_up(backend, products):
    spy = SpyBackend(backend)
    episode = Episode(spy, "q", profile="oro7")
    first = products[0]
    specs = [{"q": first["title"]}, {"q": "zzqx yyqv wwqk", "service": "COD"}]
    result = ok(episode.call("find_products_in_same_shop", {"product_queries": specs}))
    assert result["found"] is False and result["products"] == [] and result["shop_id"] is None
    first_hits = backend.find_product(first["title"], page=1)
    distinct_shops = list(dict.fromkeys(hit["shop_id"] for hit in first_hits))[:10]
    assert result["shops_tried"] == len(distinct_shops)
    per_shop = spy.requests[1:5]
    assert [(r["q"], r["service"]) for r in per_shop] == [
        ("zzqx yyqv wwqk", "COD"),
        ("zzqx yyqv wwqk", None),
        ("zzqx yyqv", None),
        ("zzqx", None),
    ]
    assert {r["shop_id"] for r in per_shop} == {distinct_shops[0]}
    assert len(spy.requests) == 1 + 4 * len(distinct_shops)


def test_same_shop_drops_a_service_the_shop_lacks(backend, products):
    """A spec whose service no product of the shop has is retried without it, in that shop."""
    for shop_id in dict.fromkeys(p["shop_id"] for p in products):
        items = backend.products_in_shop(shop_id, limit=100)
        flags = {flag for item in items for flag in item["service"]}
        missing = [f for f in ("official", "freeShipping", "COD", "flashsale") if f not in flags]
        if len(items) >= 2 and missing:
            break
    else:
        raise AssertionError("no shop lacking a service flag")
    spy = SpyBackend(backend)
    episode = Episode(spy, "q", profile="oro7")
    price = items[0]["price"]
    specs = [
        {"q": items[0]["title"], "price": f"{price}-{price}"},
        {"q": items[1]["title"], "service": missing[0]},
    ]
    result = ok(episode.call("find_products_in_same_shop", {"product_queries": specs}))
    assert result["found"] is True
    assert {p["shop_id"] for p in result["products"]} == {result["shop_id"]}
    # The exact title at its exact price puts the spec's own shop first; its search with the flag finds
    # nothing, so the harness retries without it and succeeds there.
    assert result["shop_id"] == shop_id and result["shops_tried"] == 1
    in_shop = [(r["q"], r["service"]) for r in spy.requests if r.get("shop_id") == shop_id]
    assert in_shop == [(items[1]["title"], missing[0]), (items[1]["title"], None)]


def test_same_shop_bad_specs(episode):
    assert "is empty" in error(episode.call("find_products_in_same_shop", {"product_queries": "[]"}))
    assert "product_queries[1]" in error(
        episode.call("find_products_in_same_shop", {"product_queries": [{"q": "a"}, {"price": "1-2"}]})
    )
    assert "product_queries[0]" in error(
        episode.call("find_products_in_same_shop", {"product_queries": ["yoga mat"]})
    )
    assert "unknown key" in error(
        episode.call("find_products_in_same_shop", {"product_queries": [{"q": "a", "color": "red"}]})
    )
    assert "price" in error(
        episode.call("find_products_in_same_shop", {"product_queries": [{"q": "a", "price": "cheap"}]})
    )
    assert "JSON array" in error(episode.call("find_products_in_same_shop", {"product_queries": {"q": "a"}}))


# -- calculate_voucher -----------------------------------------------------------------------------
def _voucher(episode, **arguments):
    return ok(episode.call("calculate_voucher", arguments))


def test_calculate_voucher_fixed_and_threshold(episode):
    applied = _voucher(
        episode, product_prices="60,50.5", voucher_type="fixed", discount_value=20, threshold=100, budget=91
    )
    assert applied == {
        "prices": [60.0, 50.5],
        "total_before": 110.5,
        "discount_amount": 20.0,
        "total_after": 90.5,
        "within_budget": True,
        "voucher_applied": True,
        "budget": 91.0,
    }
    as_floats = _voucher(
        episode,
        product_prices=[60.0, 50.5],
        voucher_type="fixed",
        discount_value=20,
        threshold=100,
        budget=91,
    )
    assert as_floats == applied
    below = _voucher(
        episode, product_prices=[60, 30], voucher_type="fixed", discount_value=20, threshold=100, budget=80
    )
    assert (
        below["voucher_applied"] is False and below["total_after"] == 90.0 and below["within_budget"] is False
    )


def test_calculate_voucher_percentage_reads_fraction_or_percent_and_caps(episode):
    as_percent = _voucher(
        episode, product_prices="200", voucher_type="percentage", discount_value=35, threshold=100, budget=150
    )
    as_fraction = _voucher(
        episode,
        product_prices="200",
        voucher_type="percentage",
        discount_value=0.35,
        threshold=100,
        budget=150,
    )
    assert as_percent == as_fraction
    assert as_percent["discount_amount"] == 70.0 and as_percent["total_after"] == 130.0
    capped = _voucher(
        episode,
        product_prices="200",
        voucher_type="percentage",
        discount_value="35",
        threshold=100,
        budget=150,
        cap=50,
    )
    assert (
        capped["discount_amount"] == 50.0
        and capped["total_after"] == 150.0
        and capped["within_budget"] is True
    )


def test_calculate_voucher_errors(episode):
    base = {"voucher_type": "fixed", "discount_value": 5, "threshold": 1, "budget": 10}
    assert "comma-separated numbers" in error(
        episode.call("calculate_voucher", {"product_prices": "a,b", **base})
    )
    assert "not one of" in error(
        episode.call("calculate_voucher", {"product_prices": "1", **base, "voucher_type": "platform"})
    )
    too_much = {**base, "voucher_type": "percentage", "discount_value": 150}
    assert "0-100" in error(episode.call("calculate_voucher", {"product_prices": "1", **too_much}))
    assert "finite number" in error(
        episode.call("calculate_voucher", {"product_prices": "1", **base, "budget": "lots"})
    )


@settings(max_examples=150, deadline=None)
@given(
    prices=st.lists(
        st.floats(min_value=1, max_value=5000, allow_nan=False).map(lambda x: round(x, 2)),
        min_size=1,
        max_size=4,
    ),
    percent=st.integers(min_value=10, max_value=50),
    threshold_share=st.floats(min_value=0.1, max_value=1.5),
    cap=st.one_of(st.just(0.0), st.floats(min_value=1, max_value=2000)),
)
def test_calculate_voucher_agrees_with_the_problem_voucher(backend, prices, percent, threshold_share, cap):
    """The tool's arithmetic is the task voucher's (the scorer's) arithmetic."""
    total = sum(prices)
    threshold = round(total * threshold_share, 2)
    voucher = Voucher(
        voucher_type="platform",
        threshold=threshold,
        discount_type="percentage",
        discount=percent / 100,
        cap=cap or None,
        budget=total,
    )
    episode = Episode(backend, "q", profile="oro7")
    result = _voucher(
        episode,
        product_prices=",".join(str(p) for p in prices),
        voucher_type="percentage",
        discount_value=percent,
        threshold=threshold,
        budget=total,
        cap=cap,
    )
    assert math.isclose(result["total_after"], round(voucher.discounted_total(total), 2), abs_tol=0.011)
    assert result["voucher_applied"] == (total >= threshold)


# -- recommend / terminate -------------------------------------------------------------------------
def test_recommend_keeps_the_users_order_and_terminate_ends(episode):
    text = episode.call("recommend_product", {"product_ids": " 30, 10 ,20"}).text
    assert text == "Having recommended the products to the user: 30,10,20."
    assert episode.recommended_product_ids == ["30", "10", "20"]
    assert episode.recommended_at_step == 1
    assert (
        ok(episode.call("terminate", {"status": "failure"}))
        == "The interaction has been completed with status: failure"
    )
    assert episode.terminated == "failure" and episode.ended and "terminated" in episode.end_reason


def test_terminate_defaults_to_success(episode):
    episode.call("terminate")
    assert episode.terminated == "success"


# -- full-profile information tools ----------------------------------------------------------------
def test_view_shop_information(episode, shops, rich_product):
    result = ok(episode.call("view_shop_information", {"shop_id": rich_product["shop_id"]}))
    assert result == shops[rich_product["shop_id"]].model_dump()
    assert "not in the catalogue" in error(episode.call("view_shop_information", {"shop_id": "nope"}))
    without_shops = Episode(episode._ctx.backend, "q", profile="full")
    assert "no shop records" in error(
        without_shops.call("view_shop_information", {"shop_id": rich_product["shop_id"]})
    )


@pytest.fixture
def voucher_problem(rich_product):
    return Problem.model_validate(
        {
            "query": "Two items under budget with a voucher",
            "reward": [{"product_id": rich_product["product_id"], "title": [rich_product["title"]]}],
            "voucher": {
                "voucher_type": "shop",
                "threshold": 500,
                "discount_type": "percentage",
                "face_value": None,
                "discount": 0.2,
                "cap": 150,
                "price_after_voucher": 1900.0,
                "budget": 2000,
            },
        }
    )


def test_view_voucher_information_hides_the_answer(backend, voucher_problem, rich_product):
    episode = Episode.for_problem(voucher_problem, backend, profile="full")
    result = ok(episode.call("view_voucher_information", {}))
    assert result == {
        "voucher_type": "shop",
        "discount_type": "percentage",
        "threshold": 500.0,
        "face_value": None,
        "discount": 0.2,
        "cap": 150.0,
        "budget": 2000.0,
    }
    assert "price_after_voucher" not in result
    assert episode.query == voucher_problem.query and episode.problem_id == voucher_problem.problem_id
    # The reward never enters the episode: not in its state, its trace or its summary.
    assert rich_product["product_id"] not in repr(vars(episode))
    assert rich_product["product_id"] not in episode.summary().model_dump_json()
    no_voucher = Episode(backend, "q", profile="full")
    assert "no voucher" in error(no_voucher.call("view_voucher_information"))
