from __future__ import annotations

import gzip
import json
import os
import threading

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.catalog.loader import (
    CatalogFormatError,
    CatalogReadError,
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


VALID = st.builds(
    lambda i, price: line({"id": str(i), "product": {**GOOD, "product_id": str(i), "price": price}}).encode(),
    st.integers(0, 10**9),
    st.floats(0, 1e6),
)
JUNK = st.binary(max_size=60).filter(lambda b: b"\n" not in b and not b.startswith(b"\x1f\x8b"))
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
).map(lambda value: json.dumps(value).encode())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(
        st.one_of(VALID.map(lambda b: (True, b)), st.tuples(st.just(False), JUNK | JSONISH)), max_size=25
    ),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    bom=st.booleans(),
    compress=st.booleans(),
)
def test_every_line_is_accounted_for_whatever_the_bytes(tmp_path, lines, newline, bom, compress):
    """Any bytes at all: no exception, each line is loaded, rejected or blank, and valid lines load."""
    data = (b"\xef\xbb\xbf" if bom else b"") + newline.join(raw for _, raw in lines)
    path = tmp_path / "in.jsonl"
    path.write_bytes(gzip.compress(data) if compress else data)
    rejected: list[int] = []
    report = LoadReport(source=str(path), on_reject=lambda error, raw: rejected.append(error.line_no))
    loaded = [r.line_no for r in iter_catalog(path, report)]
    physical = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    assert report.lines_read == physical == report.loaded + report.rejected + report.blank
    assert len(set(loaded) | set(rejected)) == len(loaded) + len(rejected)
    valid = [number for number, (ok, _) in enumerate(lines, start=1) if ok]
    assert set(valid) <= set(loaded)


def test_byte_order_mark_and_crlf_do_not_touch_line_one(tmp_path):
    path = tmp_path / "cat.jsonl"
    good = line({"id": "1", "product": {**GOOD, "product_id": "1"}}).encode()
    path.write_bytes(b"\xef\xbb\xbf" + good + b"\r\n" + good.replace(b'"1"', b'"2"') + b"\r\n")
    report = LoadReport(source=str(path))
    assert [r.line_no for r in iter_catalog(path, report)] == [1, 2]
    assert report.rejected == 0


def test_an_over_long_line_is_skipped_unread_and_counted(tmp_path, monkeypatch):
    monkeypatch.setattr("shoparena.catalog.loader.MAX_LINE_BYTES", 100)
    good = line({"id": "1", "product": {**GOOD, "product_id": "1"}}).encode()
    path = tmp_path / "cat.jsonl"
    path.write_bytes(b"x" * 5000 + b"\n" + good[:99] + b"\n")
    report = LoadReport(source=str(path))
    assert list(iter_catalog(path, report)) == []
    assert report.errors[0].line_no == 1 and "5,000 bytes, over the 100-byte limit" in report.errors[0].reason
    assert report.errors[1].line_no == 2 and "invalid JSON" in report.errors[1].reason


def test_a_pipe_can_be_read(tmp_path):
    """`--from <(zcat …)`: the reader must not seek back to sniff for gzip."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    payload = gzip.compress(line({"id": "1", "product": {**GOOD, "product_id": "1"}}).encode() + b"\n")

    def feed():
        with fifo.open("wb") as handle:
            handle.write(payload)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        assert [r.product.product_id for r in iter_catalog(fifo)] == ["1"]
    finally:
        writer.join()


def test_a_truncated_gzip_raises_with_the_count_read(tmp_path):
    data = gzip.compress(
        b"\n".join(
            line({"id": str(i), "product": {**GOOD, "product_id": str(i)}}).encode() for i in range(3000)
        )
    )
    path = tmp_path / "cat.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    loaded = []
    with pytest.raises(CatalogReadError) as info:
        loaded.extend(iter_catalog(path))
    assert "truncated gzip" in str(info.value)
    assert info.value.lines_read == len(loaded) > 0
