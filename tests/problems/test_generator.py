from __future__ import annotations

import random
import re
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.problems.canonical import reward_fingerprint, with_leak_clusters
from shoparena.problems.generator import (
    GenerationError,
    ProblemGenerator,
    build_voucher,
    sample_price,
    sample_reward_spec,
)
from shoparena.problems.io import dumps_problems, parse_problems, read_problems
from shoparena.problems.models import Problem
from shoparena.problems.templates import (
    MULTI_ITEM_FAMILIES,
    PRODUCT_FAMILIES,
    SERVICE_PHRASES,
    SHOP_FAMILIES,
    number,
)
from tests.problems.gold_checker import spec_violations, voucher_violations

VOUCHER_TAIL = re.compile(
    r"\n\nMy budget is only `(?P<budget>\d+)`, but I have a voucher with the following rules:\n"
    r"1\. (?P<scope>The voucher applies to all products\.|"
    r"The voucher only applies to the products from the same shop\.)\n"
    r"2\. It is valid only when the total price of the products exceeds `(?P<threshold>\d+)`\.\n"
    r"3\. It provides (?:a fixed discount of `(?P<face>\d+)`|"
    r"a percentage discount of `(?P<percent>\d+)%` with a cap of `(?P<cap>\d+)`)\.$"
)


def _gold_products(catalog, problem: Problem) -> list[dict]:
    products = []
    for spec in problem.rewards:
        product = catalog.store.get_dict(spec.product_id)
        assert product is not None, f"gold product {spec.product_id} is not in the catalogue"
        products.append(product)
    return products


def _assert_mentions_constraints(problem: Problem) -> None:
    text = problem.query.lower()
    for spec in problem.rewards:
        title_words = {w.lower() for w in spec.title[0].split()}
        assert any(w in title_words for w in re.findall(r"[a-z][a-z'\-]+", text)), problem.query
        for option in spec.sku_options or []:
            for value in option.values():
                assert value in text, (value, problem.query)
        for entry in spec.attributes or []:
            for values in entry.values():
                assert values[0] in text, (values[0], problem.query)
        for flag in spec.service or []:
            assert any(p.lower() in text for p in SERVICE_PHRASES[flag]), (flag, problem.query)
        for entry in spec.price or []:
            for mode, (low, high) in entry.items():
                if mode != "less than":
                    assert number(low) in text
                if mode != "greater than":
                    assert number(high) in text


def _assert_answerable(catalog, problem: Problem) -> None:
    products = _gold_products(catalog, problem)
    for spec, product in zip(problem.rewards, products, strict=True):
        assert spec_violations(spec, product) == [], problem.to_record()
    if problem.bucket == "shop":
        assert 2 <= len(products) <= 4
        assert len({p["shop_id"] for p in products}) == 1
        assert len({p["product_id"] for p in products}) == len(products)
    if problem.bucket == "voucher":
        assert voucher_violations(problem, products) == [], problem.to_record()
        match = VOUCHER_TAIL.search(problem.query)
        assert match, problem.query
        voucher = problem.voucher
        assert int(match["budget"]) == voucher.budget and int(match["threshold"]) == voucher.threshold
        assert ("all products" in match["scope"]) == (voucher.voucher_type == "platform")
        if voucher.discount_type == "fixed":
            assert int(match["face"]) == voucher.face_value
        else:
            assert int(match["percent"]) == round(voucher.discount * 100) and int(match["cap"]) == voucher.cap
        if voucher.voucher_type == "platform":
            assert 1 <= len(products) <= 4
        else:
            assert 2 <= len(products) <= 4
    _assert_mentions_constraints(problem)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_every_generated_problem_is_solved_by_its_gold_answer(small_catalog, seed):
    problems = ProblemGenerator(small_catalog, seed=seed).generate(12, variants=2)
    assert Counter(p.bucket for p in problems) == {"product": 8, "shop": 8, "voucher": 8}
    for problem in problems:
        assert problem.seed == seed and problem.difficulty in {"easy", "medium", "hard"}
        assert problem.leak_cluster_id == reward_fingerprint(problem)
        _assert_answerable(small_catalog, problem)


def test_same_seed_gives_identical_bytes(small_catalog):
    first = dumps_problems(ProblemGenerator(small_catalog, seed=5).generate(30, variants=2))
    second = dumps_problems(ProblemGenerator(small_catalog, seed=5).generate(30, variants=2))
    other = dumps_problems(ProblemGenerator(small_catalog, seed=6).generate(30, variants=2))
    assert first == second
    assert first != other


def test_variants_share_a_leak_cluster_and_differ_in_surface(small_catalog):
    problems = ProblemGenerator(small_catalog, seed=9).generate(15, variants=3)
    clusters = defaultdict(list)
    for problem in problems:
        clusters[problem.leak_cluster_id].append(problem)
    assert len(clusters) == 15
    for members in clusters.values():
        assert len(members) == 3
        assert len({p.query for p in members}) == 3
        assert len({p.problem_id for p in members}) == 3
        assert len({reward_fingerprint(p) for p in members}) == 1


def test_fingerprint_ignores_order_and_case_but_not_constraints():
    base = {
        "query": "q",
        "reward": [
            {
                "product_id": "1",
                "title": ["A"],
                "attributes": [{"k": ["v"]}, {"j": ["w"]}],
                "service": ["COD"],
            },
            {"product_id": "2", "title": ["B"], "price": [{"greater than": [5, None]}]},
        ],
    }
    shuffled = {
        "query": "another wording",
        "reward": [
            {"product_id": "2", "title": ["b"], "price": [{"greater than": [5.0, None]}]},
            {
                "product_id": "1",
                "title": [" a "],
                "attributes": [{"j": ["W"]}, {"k": ["v"]}],
                "service": ["COD"],
            },
        ],
    }
    changed = {
        "query": "q",
        "reward": [base["reward"][0], {**base["reward"][1], "price": [{"between": [5, 9]}]}],
    }
    fingerprint = reward_fingerprint(Problem.model_validate(base))
    assert fingerprint == reward_fingerprint(Problem.model_validate(shuffled))
    assert fingerprint != reward_fingerprint(Problem.model_validate(changed))


def test_distinct_tasks_get_distinct_clusters(small_catalog):
    problems = ProblemGenerator(small_catalog, seed=2).generate(60)
    assert len({p.leak_cluster_id for p in problems}) == 60


def test_bucket_selection_and_web_refusal(small_catalog):
    generator = ProblemGenerator(small_catalog, seed=1)
    assert {p.bucket for p in generator.generate(4, ["voucher"])} == {"voucher"}
    with pytest.raises(GenerationError, match="knowledge source"):
        generator.generate(3, ["product", "web"])


def test_each_bucket_has_at_least_five_paraphrase_families(small_catalog):
    assert min(len(PRODUCT_FAMILIES), len(SHOP_FAMILIES), len(MULTI_ITEM_FAMILIES)) >= 5
    problems = ProblemGenerator(small_catalog, seed=3).generate(5, ["shop"], variants=5)
    openings = {p.query[:18] for p in problems}
    assert len(openings) >= 5


@settings(max_examples=300, deadline=None)
@given(price=st.floats(min_value=0, max_value=1e6, allow_nan=False), seed=st.integers(0, 2**31))
def test_price_bounds_are_strict_and_follow_the_formulas(price, seed):
    constraint = sample_price(price, random.Random(seed))
    if constraint is None:
        return
    ((mode, (low, high)),) = constraint[0].items()
    whole = int(price)
    if mode == "less than":
        assert low == 0 and price < high <= 2 * whole
    elif mode == "greater than":
        assert high is None and 0 <= low < price
    else:
        assert 0 <= low < price < high <= 2 * whole


def test_price_modes_are_tried_in_order_with_coins():
    modes = Counter()
    for seed in range(4000):
        constraint = sample_price(500.0, random.Random(seed))
        modes[next(iter(constraint[0])) if constraint else None] += 1
    # each mode on its own fair coin, in order less → greater → between: ≈ 1/2, 1/4, 1/8, none 1/8
    assert 0.45 < modes["less than"] / 4000 < 0.55
    assert 0.20 < modes["greater than"] / 4000 < 0.30
    assert 0.09 < modes["between"] / 4000 < 0.16
    assert 0.09 < modes[None] / 4000 < 0.16


@settings(max_examples=300, deadline=None)
@given(total=st.floats(min_value=100, max_value=1e6, allow_nan=False), seed=st.integers(0, 2**31))
def test_voucher_arithmetic_keeps_the_gold_set_within_budget(total, seed):
    rng = random.Random(seed)
    voucher = build_voucher(total, rng.choice(["platform", "shop"]), rng)
    assert int(0.1 * total) <= voucher.threshold <= int(0.9 * total)
    if voucher.discount_type == "fixed":
        assert int(0.1 * voucher.threshold) <= voucher.face_value <= int(0.5 * voucher.threshold)
        expected = total - voucher.face_value
    else:
        assert 10 <= round(voucher.discount * 100) <= 50
        assert voucher.threshold * voucher.discount < voucher.cap <= voucher.threshold
        expected = max(total * (1 - voucher.discount), total - voucher.cap)
    assert voucher.discounted_total(total) == pytest.approx(expected)
    assert voucher.discounted_total(total) <= voucher.budget


def test_reward_spec_samples_only_what_the_product_has(small_catalog):
    rng = random.Random(0)
    seen = Counter()
    for ordinal in range(0, 400):
        product = small_catalog.store.dict_by_ord(ordinal)
        spec = sample_reward_spec(product, rng)
        assert spec_violations(spec, product) == []
        if spec.sku_options:
            first_winner = spec.sku_options[0]
            assert first_winner in product["sku_options"].values()
        seen.update(k for k in ("sku_options", "attributes", "service", "price") if getattr(spec, k))
        assert spec_violations(sample_reward_spec(product, rng, with_price=False), product) == []
    assert all(seen[k] > 40 for k in ("sku_options", "attributes", "service", "price")), seen


def test_the_gold_checker_catches_broken_specs(small_catalog):
    """The answerability test is only worth something if its checker rejects wrong specs."""
    problems = ProblemGenerator(small_catalog, seed=8).generate(30)
    caught = Counter()
    for problem in problems:
        products = _gold_products(small_catalog, problem)
        spec, product = problem.rewards[0], products[0]
        missing_flag = next((f for f in SERVICE_PHRASES if f not in product["service"]), None)
        if missing_flag:
            broken = spec.model_copy(update={"service": [missing_flag]})
            caught["service"] += bool(spec_violations(broken, product))
        broken = spec.model_copy(update={"sku_options": [{"size": "no-such-size"}]})
        caught["sku"] += bool(spec_violations(broken, product))
        broken = spec.model_copy(update={"attributes": [{"colour": ["ultraviolet"]}]})
        caught["attribute"] += bool(spec_violations(broken, product))
        broken = spec.model_copy(update={"price": [{"greater than": [int(product["price"]) + 1, None]}]})
        caught["price"] += bool(spec_violations(broken, product))
        if problem.voucher is not None:
            tight = problem.model_copy(update={"voucher": problem.voucher.model_copy(update={"budget": 1})})
            caught["budget"] += bool(voucher_violations(tight, products))
    assert caught["sku"] == caught["attribute"] == caught["price"] == 30
    assert caught["service"] > 0 and caught["budget"] == 10


def test_generated_problems_round_trip_in_both_formats(small_catalog):
    problems = ProblemGenerator(small_catalog, seed=4).generate(9, variants=2)
    for fmt in ("shoppingbench", "arena"):
        loaded = parse_problems(dumps_problems(problems, fmt=fmt), f"gen.{fmt}")
        assert loaded.format == fmt and loaded.rejects == []
        records = [p.to_record() for p in loaded.problems]
        expected = [p.to_record() for p in problems]
        if fmt == "arena":  # the arena format names each problem's category
            expected = [{**r, "category": r["bucket"].capitalize()} for r in expected]
        assert records == expected


def test_reused_upstream_tasks_join_the_cluster_of_their_reward(upstream_dir):
    problems = with_leak_clusters(read_problems(upstream_dir / "oro_problem_suite_v3.json").problems)
    assert all(p.leak_cluster_id for p in problems)
    reused = problems[0].model_copy(
        update={"query": "A new wording of the same task.", "leak_cluster_id": None}
    )
    (clustered,) = with_leak_clusters([reused])
    assert clustered.leak_cluster_id == problems[0].leak_cluster_id
