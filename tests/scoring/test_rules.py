"""Each scoring rule alone and together, on hand-made problems (lexical similarity: exact and fast)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoparena.catalog.models import Product
from shoparena.problems.models import Problem, Voucher
from shoparena.scoring.rules import (
    DictLookup,
    RuleScorer,
    normalise_ids,
    parse_product_ids,
    price_hit,
    score_item,
)
from shoparena.scoring.similarity import LexicalSimilarity

LEX = LexicalSimilarity()
TITLE = "red cotton summer dress for women"


def product(pid="p1", shop="s1", title=TITLE, price=100.0, **fields) -> Product:
    return Product(product_id=pid, shop_id=shop, title=title, price=price, **fields)


def product_problem(**reward) -> Problem:
    return Problem(query="q", reward={"product_id": "gold", "title": [TITLE], **reward})


def score(problem, products, ids, mode="upstream"):
    return RuleScorer(DictLookup(products), LEX, mode).score(problem, ids)


# -- single rules ---------------------------------------------------------------------------------


def test_exact_id_shortcut_ignores_every_constraint():
    problem = product_problem(price=[{"between": [10, 20]}], service=["COD"])
    gold = product(pid="gold", title="something else entirely", price=999.0)
    result = score(problem, [gold], ["gold"])
    assert result.rule == 1.0 and result.success and result.gold_rate == 1.0
    assert result.axes["price"].hits == result.axes["price"].checks == 1


def test_title_threshold_upstream_half_strict_point_seven():
    problem = product_problem()
    # Jaccard 4/6 ≈ 0.667: passes 0.5 (upstream), fails 0.7 (strict)
    near = product(title="red cotton summer dress")
    assert score(problem, [near], ["p1"], "upstream").success
    strict = score(problem, [near], ["p1"], "strict")
    assert not strict.success and strict.axes["title"].hits == 0


@pytest.mark.parametrize(
    ("constraint", "price", "hit"),
    [
        ({"greater than": [50, None]}, 50.0, True),  # inclusive low bound
        ({"greater than": [50, None]}, 49.99, False),
        ({"greater than": [50, None]}, 10_000.0, True),
        ({"between": [50, 80]}, 50.0, True),
        ({"between": [50, 80]}, 80.0, True),  # inclusive high bound
        ({"between": [50, 80]}, 80.01, False),
        ({"between": [50, 80]}, 49.0, False),
        ({"less than": [0, 80]}, 80.0, True),
        ({"less than": [0, 80]}, 0.0, True),
        ({"less than": [0, 80]}, 81.0, False),
    ],
)
def test_price_modes_with_inclusive_bounds(constraint, price, hit):
    problem = product_problem(price=[constraint])
    result = score(problem, [product(price=price)], ["p1"])
    assert result.axes["price"].hits == int(hit) and result.axes["price"].checks == 1
    assert result.rule == (1.0 if hit else 0.5)


def test_every_required_service_is_a_check():
    problem = product_problem(service=["COD", "freeShipping", "official"])
    partial = product(service=["COD", "official", "flashsale"])
    result = score(problem, [partial], ["p1"])
    assert (result.axes["service"].hits, result.axes["service"].checks) == (2, 3)
    assert result.rule == pytest.approx(3 / 4)
    assert score(problem, [product(service=["COD", "freeShipping", "official"])], ["p1"]).success


def test_best_single_sku_option_is_taken_never_a_mix():
    problem = product_problem(sku_options=[{"color": "red", "size": "m"}])
    mixed = product(sku_options={"1": {"color": "red", "size": "s"}, "2": {"color": "blue", "size": "m"}})
    result = score(problem, [mixed], ["p1"])
    assert (result.axes["sku_attr"].hits, result.axes["sku_attr"].checks) == (1, 2)
    exact = product(sku_options={"1": {"color": "blue", "size": "s"}, "2": {"color": "red", "size": "m"}})
    assert score(problem, [exact], ["p1"]).success


def test_sku_pair_may_come_from_the_attributes():
    problem = product_problem(sku_options=[{"color": "red", "size": "m"}])
    combined = product(sku_options={"1": {"size": "m"}}, attributes={"color": ["red", "blue"]})
    assert score(problem, [combined], ["p1"]).success


def test_attribute_lists_every_value_is_a_check_case_insensitive():
    problem = product_problem(attributes=[{"material": ["cotton", "linen"]}, {"brand": ["acme"]}])
    result = score(problem, [product(attributes={"material": ["Cotton"], "brand": ["ACME"]})], ["p1"])
    assert (result.axes["sku_attr"].hits, result.axes["sku_attr"].checks) == (2, 3)
    full = product(attributes={"material": ["linen", "cotton", "silk"], "brand": ["acme"]})
    assert score(problem, [full], ["p1"]).success


def test_wrong_key_with_right_value_does_not_match():
    problem = product_problem(attributes=[{"material": ["cotton"]}])
    result = score(problem, [product(attributes={"lining": ["cotton"]})], ["p1"])
    assert result.axes["sku_attr"].hits == 0


def test_all_rules_together_rule_is_hits_over_checks():
    problem = product_problem(
        price=[{"between": [50, 150]}],
        service=["COD", "official"],
        sku_options=[{"size": "m"}],
        attributes=[{"material": ["cotton"]}],
    )
    candidate = product(
        title="blue steel hammer",  # title miss
        price=100.0,  # hit
        service=["COD"],  # 1 of 2
        sku_options={"1": {"size": "m"}},  # hit
        attributes={"material": ["silk"]},  # miss
    )
    result = score(problem, [candidate], ["p1"])
    assert result.rule == pytest.approx(3 / 6)
    assert {a: (t.hits, t.checks) for a, t in result.axes.items()} == {
        "title": (0, 1),
        "price": (1, 1),
        "service": (1, 2),
        "sku_attr": (1, 2),
        "knowledge": (0, 0),
    }


def test_product_bucket_scores_only_the_first_id():
    problem = product_problem()
    wrong, right = product(pid="a", title="blue steel hammer"), product(pid="b")
    assert not score(problem, [wrong, right], ["a", "b"]).success
    assert score(problem, [wrong, right], ["b", "a"]).success


def test_empty_recommendation_and_unresolved_ids_score_zero():
    problem = product_problem()
    for ids in ([], "", None, ["missing"]):
        result = score(problem, [product()], ids)
        assert result.rule == 0.0 and not result.success
        assert result.axes["title"].checks == 1 and result.axes["title"].hits == 0


# -- shop and voucher -----------------------------------------------------------------------------


SHOP_TITLES = ("alpha red widget", "beta blue gadget", "gamma green gizmo", "delta black doohickey")


def shop_problem(n=2, voucher=None) -> Problem:
    rewards = [{"product_id": f"g{i}", "title": [SHOP_TITLES[i]]} for i in range(n)]
    return Problem(query="q", reward=rewards, voucher=voucher)


def shop_products(n=2, shops=None, prices=None):
    shops = shops or ["s1"] * n
    prices = prices or [10.0] * n
    return [product(pid=f"p{i}", shop=shops[i], title=SHOP_TITLES[i], price=prices[i]) for i in range(n)]


def test_shop_needs_one_shop_and_every_position():
    problem = shop_problem(3)
    good = score(problem, shop_products(3), ["p0", "p1", "p2"])
    assert good.success and good.shop is True and good.budget is None
    split = score(problem, shop_products(3, shops=["s1", "s1", "s2"]), ["p0", "p1", "p2"])
    assert split.rule == 1.0 and split.shop is False and not split.success
    short = score(problem, shop_products(3), ["p0", "p1"])
    assert short.shop is False and short.rule == pytest.approx(2 / 3)


def test_positions_are_scored_in_order():
    problem = shop_problem(2)
    swapped = score(problem, shop_products(2), ["p1", "p0"])
    assert swapped.rule < 1 and not swapped.success


def test_unresolved_position_scores_zero_there_only():
    problem = shop_problem(2)
    result = score(problem, shop_products(2), ["p0", "nope"])
    assert [item.rule for item in result.items] == [1.0, 0.0]
    assert result.items[1].resolved is False and result.shop is False


def test_extra_ids_beyond_the_reward_are_ignored():
    problem = shop_problem(2)
    extra = [*shop_products(2), product(pid="x", shop="elsewhere", price=1e6)]
    result = score(problem, extra, ["p0", "p1", "x"])
    assert result.success and result.shop is True
    assert len(result.items) == 2


def voucher(**kw) -> Voucher:
    base = {"voucher_type": "platform", "threshold": 100, "discount_type": "fixed", "face_value": 20}
    return Voucher(**{**base, **kw})


@pytest.mark.parametrize(
    ("spec", "prices", "within"),
    [
        ({"budget": 200}, [90, 90], True),  # Σ = 180 ≤ budget, no voucher needed
        ({"budget": 200}, [110, 105], True),  # Σ = 215 ≥ 100, fixed 20 → 195
        ({"budget": 194}, [110, 105], False),  # 195 > 194
        ({"budget": 90, "threshold": 100, "face_value": 20}, [50, 50], True),  # threshold is ≥: 100 → 80
        ({"budget": 90, "threshold": 100.01, "face_value": 20}, [50, 50], False),  # not reached
        (
            {"budget": 180, "discount_type": "percentage", "discount": 0.1, "face_value": None},
            [100, 100],
            True,
        ),  # 200 × 0.9 = 180
        (
            {"budget": 180, "discount_type": "percentage", "discount": 0.1, "face_value": None, "cap": 15},
            [100, 100],
            False,
        ),  # reduction capped at 15 → 185
        (
            {"budget": 185, "discount_type": "percentage", "discount": 0.1, "face_value": None, "cap": 15},
            [100, 100],
            True,
        ),
    ],
)
def test_voucher_fixed_percentage_cap_threshold(spec, prices, within):
    problem = shop_problem(2, voucher=voucher(**spec))
    result = score(problem, shop_products(2, prices=prices), ["p0", "p1"])
    assert result.budget is within and result.success is within and result.rule == 1.0


def test_shop_voucher_needs_one_shop_platform_does_not():
    shops = ["s1", "s2"]
    prices = [110.0, 105.0]  # Σ = 215 > budget 200; the 20 off brings it to 195
    shop_voucher = shop_problem(2, voucher=voucher(voucher_type="shop", budget=200))
    assert not score(shop_voucher, shop_products(2, shops, prices), ["p0", "p1"]).budget
    assert score(shop_voucher, shop_products(2, None, prices), ["p0", "p1"]).budget
    platform = shop_problem(2, voucher=voucher(voucher_type="platform", budget=200))
    assert score(platform, shop_products(2, shops, prices), ["p0", "p1"]).budget


def test_voucher_budget_needs_every_position():
    problem = shop_problem(2, voucher=voucher(budget=1000))
    result = score(problem, shop_products(2), ["p0"])
    assert result.budget is False and not result.success


def test_voucher_discounted_total_hand_values():
    fixed = voucher(budget=0, threshold=100, face_value=30)
    assert fixed.discounted_total(99.0) == 99.0
    assert fixed.discounted_total(100.0) == 70.0
    pct = voucher(budget=0, discount_type="percentage", discount=0.2, face_value=None, cap=30)
    assert pct.discounted_total(100.0) == pytest.approx(80.0)
    assert pct.discounted_total(200.0) == pytest.approx(170.0)  # 40 capped at 30
    assert voucher(budget=0, voucher_type="shop").discounted_total(150.0, single_shop=False) == 150.0


# -- strict mode ----------------------------------------------------------------------------------


def test_strict_strips_and_deduplicates_ids():
    problem = shop_problem(2)
    products = shop_products(2)
    assert score(problem, products, [" p0 ", "p1 "], "strict").success
    assert not score(problem, products, [" p0 ", "p1 "], "upstream").success  # ids kept as given
    # a duplicate would fill the second position upstream, but not in strict mode
    twin = shop_problem(2)
    twin.reward[1] = twin.reward[0].model_copy()
    upstream = score(twin, products, ["p0", "p0"], "upstream")
    strict = score(twin, products, ["p0", "p0"], "strict")
    assert upstream.success and upstream.rule == 1.0
    assert not strict.success and strict.rule == 0.5 and strict.product_ids == ["p0"]


def test_strict_position_counts_only_with_positive_rule():
    problem = shop_problem(2)
    junk = product(pid="j", shop="s1", title="zzz qqq", price=1.0)
    upstream = score(problem, [*shop_products(2), junk], ["p0", "j"], "upstream")
    strict = score(problem, [*shop_products(2), junk], ["p0", "j"], "strict")
    assert upstream.shop is True and strict.shop is False
    with_voucher = shop_problem(2, voucher=voucher(budget=1000))
    assert score(with_voucher, [*shop_products(2), junk], ["p0", "j"], "upstream").budget is True
    assert score(with_voucher, [*shop_products(2), junk], ["p0", "j"], "strict").budget is False


def test_strict_problem_without_scoreable_constraint_scores_zero():
    problem = Problem(query="q", reward={"product_id": "gold", "title": [" "]})
    anything = product(pid="any", title="whatever")
    upstream = score(problem, [anything], ["any"], "upstream")
    strict = score(problem, [anything], ["any"], "strict")
    assert upstream.rule == 1.0 and upstream.success  # vacuous upstream
    assert strict.rule == 0.0 and not strict.success and strict.scoreable is False


# -- web ------------------------------------------------------------------------------------------


def web_problem(knowledge="Violin") -> Problem:
    gold = {"product_id": "gold", "shop_id": "s", "title": "handmade violin bow horsetail", "price": 1.0}
    return Problem(query="q", reward=gold, Knowledge_Attribute=knowledge)


def test_web_needs_knowledge_and_close_title():
    problem = web_problem()
    assert score(problem, [product(title="handmade violin bow horsetail")], ["p1"]).success
    no_knowledge = product(title="handmade viola bow horsetail")
    result = score(problem, [no_knowledge], ["p1"])
    assert result.axes["knowledge"].hits == 0 and not result.success
    in_description = product(title="handmade bow horsetail", description="for VIOLIN players")
    result = score(problem, [in_description], ["p1"])
    assert result.axes["knowledge"].hits == 1
    assert result.axes["title"].hits == 0  # Jaccard 3/4 < 0.8
    assert (
        score(web_problem(knowledge=1989), [product(title="handmade violin bow horsetail")], ["p1"]).rule
        == 0.5
    )


# -- properties -----------------------------------------------------------------------------------

bounds = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(low=bounds, width=bounds, price=bounds)
def test_price_between_is_inclusive_interval(low, width, price):
    high = low + width
    assert price_hit(price, "between", [low, high]) == (low <= price <= high)
    assert price_hit(low, "between", [low, high]) and price_hit(high, "between", [low, high])


@given(st.lists(st.text(alphabet=" ab1,", max_size=5), max_size=8))
def test_strict_ids_are_stripped_unique_and_idempotent(ids):
    once = normalise_ids(ids, "strict")
    assert normalise_ids(once, "strict") == once
    assert len(once) == len(set(once)) and all(i == i.strip() and i for i in once)


@given(st.lists(st.sampled_from(["p0", "p1", "p2", "zz", " p1"]), max_size=6))
def test_rule_is_a_fraction_and_success_implies_full_rule(ids):
    problem = shop_problem(2)
    for mode in ("upstream", "strict"):
        result = score(problem, shop_products(3), ids, mode)
        assert 0.0 <= result.rule <= 1.0
        assert not result.success or result.rule == 1.0


def test_parse_product_ids_forms():
    assert parse_product_ids("a, b,,c") == ["a", "b", "c"]
    assert parse_product_ids([1, "2"]) == ["1", "2"]
    with pytest.raises(ValueError, match="not a string"):
        parse_product_ids([1.5])


def test_score_item_without_product_keeps_checks():
    spec = product_problem(price=[{"between": [1, 2]}]).rewards[0]
    item = score_item(None, spec, LEX, 0.5, product_id="ghost")
    assert item.rule == 0 and item.product_id == "ghost" and item.axes["price"].checks == 1


@given(st.lists(st.sampled_from(["p0", "p1", "p2", "zz", "x"]), max_size=4))
def test_ids_beyond_the_reward_never_change_the_score(extra):
    problem = shop_problem(2, voucher=voucher(budget=25))
    products = shop_products(3)
    for mode in ("upstream", "strict"):
        base = score(problem, products, ["p0", "p1"], mode)
        longer = score(problem, products, ["p0", "p1", *extra], mode)
        assert (longer.rule, longer.success, longer.shop, longer.budget) == (
            base.rule,
            base.success,
            base.shop,
            base.budget,
        )
