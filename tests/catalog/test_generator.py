from __future__ import annotations

import statistics
from collections import Counter, defaultdict

import pytest

from shoparena.catalog.generator import CHUNK_SIZE, CatalogGenerator, product_id_for
from shoparena.catalog.loader import catalog_line
from shoparena.catalog.models import SERVICES, Product
from shoparena.catalog.vocabulary import LEAVES
from shoparena.index.catalog_dir import generated_rows

N = 12_000


@pytest.fixture(scope="module")
def products() -> list[Product]:
    return list(CatalogGenerator(N, seed=3))


def test_same_seed_gives_byte_identical_output():
    first = b"\n".join(catalog_line(p) for p in CatalogGenerator(3000, seed=5))
    second = b"\n".join(catalog_line(p) for p in CatalogGenerator(3000, seed=5))
    assert first == second
    other = b"\n".join(catalog_line(p) for p in CatalogGenerator(3000, seed=6))
    assert other != first


def test_parallel_generation_matches_serial_byte_for_byte():
    n = CHUNK_SIZE * 2 + 100
    assert list(generated_rows(n, 9, workers=1)) == list(generated_rows(n, 9, workers=2))


def test_chunks_are_independent_of_previous_chunks():
    generator = CatalogGenerator(CHUNK_SIZE * 3, seed=2)
    late_first = generator.chunk_dicts(2)
    fresh = CatalogGenerator(CHUNK_SIZE * 3, seed=2)
    list(fresh.chunk_dicts(0))
    assert fresh.chunk_dicts(2) == late_first


def test_big_catalogues_are_lazy():
    generator = CatalogGenerator(2_700_000, seed=1)
    assert sum(s.product_count for s in generator.shops) == 2_700_000
    assert len(generator.chunk_dicts(500)) == CHUNK_SIZE


def test_every_record_is_a_valid_upstream_product(products):
    for product in products[:2000]:
        assert Product.model_validate(product.model_dump()) == product
        assert set(product.service) <= set(SERVICES)
        assert len(product.sku_options) <= 9
        assert list(product.sku_options) == [str(i + 1) for i in range(len(product.sku_options))]
        assert all(v == v.lower() for vals in product.attributes.values() for v in vals)
    assert len({p.product_id for p in products}) == N


def test_ids_are_unique_marketplace_style_numbers():
    ids = [product_id_for(i) for i in range(0, 9_000_000, 997)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 10 and i.isdigit() for i in ids)


def test_category_tree_is_broad(products):
    assert len(LEAVES) >= 30
    seen = {p.category for p in products}
    assert len(seen) >= 30
    assert all(" > " in c for c in seen)


def test_shop_sizes_are_skewed_and_shop_tasks_have_answers(products):
    sizes = Counter(p.shop_id for p in products)
    counts = sorted(sizes.values())
    assert counts[-1] >= 10 * statistics.median(counts)
    assert sum(1 for c in counts if c >= 4) >= 100  # plenty of shops that sell several items
    groups_by_shop = defaultdict(Counter)
    for p in products:
        groups_by_shop[p.shop_id][p.category.split(" > ")[0]] += 1
    # shops specialise: in a shop with 10+ listings, one top-level group dominates
    dominant = [
        g.most_common(1)[0][1] / sum(g.values()) for g in groups_by_shop.values() if sum(g.values()) >= 10
    ]
    assert statistics.mean(dominant) > 0.75


def test_near_duplicate_titles_across_shops(products):
    by_model = defaultdict(set)
    for p in products:
        model = p.specification.split(";")[0]
        by_model[(p.category, model)].add((p.shop_id, p.title))
    multi_shop = [v for v in by_model.values() if len({shop for shop, _ in v}) >= 3]
    assert len(multi_shop) >= 50
    listings = next(iter(multi_shop))
    titles = {title for _, title in listings}
    assert len(titles) >= 2  # the same item is worded differently by different shops


def test_prices_are_long_tailed_per_category(products):
    prices = sorted(p.price for p in products)
    p50 = prices[len(prices) // 2]
    p99 = prices[int(len(prices) * 0.99)]
    assert p99 / p50 > 5
    assert min(prices) >= 1.0
    medians = {}
    for leaf in LEAVES:
        in_leaf = sorted(p.price for p in products if p.category == leaf.path)
        if len(in_leaf) > 30:
            medians[leaf.path] = in_leaf[len(in_leaf) // 2]
    assert max(medians.values()) / min(medians.values()) > 5  # helmets cost more than phone cases


def test_sold_counts_and_services_look_like_a_marketplace(products):
    sold = [p.sold_count for p in products]
    assert 0.05 < sum(1 for s in sold if s == 0) / len(sold) < 0.4
    assert max(sold) > 50 * statistics.median(sold)
    share = Counter(s for p in products for s in p.service)
    assert 0.4 < share["COD"] / len(products) < 0.7
    assert 0.02 < share["official"] / len(products) < 0.3
    assert all(s in share for s in SERVICES)
