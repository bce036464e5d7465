from __future__ import annotations

import gzip

import orjson
import pytest

from shoparena.catalog.loader import (
    CatalogFormatError,
    LoadReport,
    catalog_line,
    iter_catalog,
    parse_catalog_line,
)
from shoparena.catalog.models import Product

GOOD = {
    "product_id": "42",
    "shop_id": "7",
    "brand": "Acme",
    "category": "Home > Kitchen",
    "title": "Acme Steel Pan 28cm",
    "price": 499.0,
    "sold_count": 3,
    "sku_options": {"1": {"Size": "28CM"}},
    "attributes": {"Material": ["Steel"]},
    "service": ["COD"],
}


def line(obj) -> str:
    return orjson.dumps(obj).decode()


def test_parses_upstream_wrapper_and_lowercases_vocabulary():
    record = parse_catalog_line(line({"id": "42", "contents": "pan text", "product": GOOD}))
    assert record.product.product_id == "42"
    assert record.contents == "pan text"
    assert record.product.sku_options == {"1": {"size": "28cm"}}
    assert record.product.attributes == {"material": ["steel"]}


def test_missing_contents_is_rebuilt_with_the_upstream_recipe():
    record = parse_catalog_line(line({"id": "42", "product": GOOD}))
    assert record.contents == "Acme Steel Pan 28cm 28cm steel"


def test_bare_product_lines_are_accepted():
    assert parse_catalog_line(line(GOOD)).product.title == "Acme Steel Pan 28cm"


def test_integer_ids_become_strings():
    record = parse_catalog_line(line({"id": 42, "product": {**GOOD, "product_id": 42, "shop_id": 7}}))
    assert record.product.product_id == "42" and record.product.shop_id == "7"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (
            line({"contents": "x", "product": {k: v for k, v in GOOD.items() if k != "product_id"}}),
            "missing id",
        ),
        (line({"foo": 1}), "missing id"),
        (line({"id": "42", "product": {**GOOD, "price": "cheap"}}), "product.price"),
        (line({"id": "42", "product": {**GOOD, "service": ["teleport"]}}), "product.service"),
        (
            line({"id": "42", "product": {**GOOD, "sku_options": {str(i): {"a": "b"} for i in range(10)}}}),
            "at most 9",
        ),
        (line({"id": "43", "product": GOOD}), "disagrees"),
        (line({"id": True, "product": GOOD}), "'id' must be a string"),
        (line({"id": "42", "product": "nope"}), "'product' must be an object"),
    ],
)
def test_bad_lines_name_the_problem(raw, reason):
    with pytest.raises(CatalogFormatError) as info:
        parse_catalog_line(raw, "cat.jsonl", 17)
    assert reason in str(info.value)
    assert info.value.line_no == 17
    assert "cat.jsonl:17" in str(info.value)


def test_stream_skips_and_counts_bad_lines_with_line_numbers(tmp_path):
    path = tmp_path / "cat.jsonl.gz"
    lines = [
        line({"id": "1", "product": {**GOOD, "product_id": "1"}}),
        "{broken",
        "",
        line({"id": "2", "product": {**GOOD, "product_id": "2", "price": -1}}),
        line({"id": "3", "product": {**GOOD, "product_id": "3"}}),
    ]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    report = LoadReport(source=str(path))
    ids = [r.product.product_id for r in iter_catalog(path, report)]
    assert ids == ["1", "3"]
    assert report.loaded == 2 and report.rejected == 2
    assert [e.line_no for e in report.errors] == [2, 4]
    assert "invalid JSON" in report.errors[0].reason
    assert "price" in report.errors[1].reason


def test_strict_mode_stops_at_the_first_bad_line(tmp_path):
    path = tmp_path / "cat.jsonl"
    path.write_text(line({"id": "1", "product": {**GOOD, "product_id": "1"}}) + "\n{broken\n")
    with pytest.raises(CatalogFormatError) as info:
        list(iter_catalog(path, strict=True))
    assert info.value.line_no == 2


def test_catalog_line_round_trips():
    product = Product.model_validate(GOOD)
    record = parse_catalog_line(catalog_line(product))
    assert record.product == product
    assert record.contents == product.search_contents()
