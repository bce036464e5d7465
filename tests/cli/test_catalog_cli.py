from __future__ import annotations

import json

import orjson
import pytest
from typer.testing import CliRunner

from shoparena.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "cat"
    result = runner.invoke(
        app, ["catalog", "build", "--products", "3000", "--seed", "4", "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    return out


def test_build_reports_and_refuses_to_clobber(built):
    assert (built / "meta.json").exists()
    again = runner.invoke(app, ["catalog", "build", "--products", "10", "--out", str(built)])
    assert again.exit_code != 0
    assert "not empty" in again.output


def test_build_needs_exactly_one_source(tmp_path):
    result = runner.invoke(app, ["catalog", "build", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "exactly one" in result.output


def test_stats_json(built):
    result = runner.invoke(app, ["catalog", "stats", str(built), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["n_products"] == 3000 and data["seed"] == 4
    assert data["n_categories_seen"] >= 30


def test_search_json_is_exactly_the_find_product_list(built):
    result = runner.invoke(
        app, ["search", str(built), "waterproof backpack", "--json", "--service", "COD", "--price", "100-"]
    )
    assert result.exit_code == 0
    hits = json.loads(result.stdout)
    assert 0 < len(hits) <= 10
    assert all(set(h) == {"product_id", "shop_id", "title", "price", "service", "sold_count"} for h in hits)
    assert all("COD" in h["service"] and h["price"] >= 100 for h in hits)


def test_search_table_and_bad_price(built):
    ok = runner.invoke(app, ["search", str(built), "yoga mat"])
    assert ok.exit_code == 0 and "product_id" in ok.stdout
    bad = runner.invoke(app, ["search", str(built), "yoga mat", "--price", "cheap"])
    assert bad.exit_code == 2 and "price" in bad.output


def test_product_json_is_view_product_information(built):
    hits = json.loads(runner.invoke(app, ["search", str(built), "earbuds", "--json"]).stdout)
    ids = [h["product_id"] for h in hits[:2]]
    result = runner.invoke(app, ["product", str(built), ",".join(ids), "--json"])
    assert result.exit_code == 0
    infos = json.loads(result.stdout)
    assert [i["product_id"] for i in infos] == ids
    assert set(infos[0]) == {"product_id", "short_description", "description", "sku_options", "attributes"}
    missing = runner.invoke(app, ["product", str(built), "0000"])
    assert missing.exit_code == 1


def test_not_a_catalogue(tmp_path):
    result = runner.invoke(app, ["search", str(tmp_path), "x"])
    assert result.exit_code == 2 and "not a catalogue directory" in result.output


def test_build_from_upstream_file_skips_and_records_bad_lines(tmp_path):
    good = {"product_id": "1", "shop_id": "9", "title": "red lamp", "price": 10.0}
    lines = [
        orjson.dumps({"id": "1", "contents": "red lamp", "product": good}),
        b"{oops",
        orjson.dumps({"id": "2", "product": {**good, "product_id": "2", "price": "x"}}),
        orjson.dumps({"id": "1", "product": good}),
    ]
    source = tmp_path / "cat.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "cat"
    result = runner.invoke(app, ["catalog", "build", "--from", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 bad line(s)" in result.output
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    assert [r["line"] for r in rejects] == [2, 3]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["n_products"] == 1 and meta["n_rejected"] == 2 and meta["n_duplicates"] == 1
    strict = runner.invoke(
        app, ["catalog", "build", "--from", str(source), "--out", str(tmp_path / "s"), "--strict"]
    )
    assert strict.exit_code == 2 and ":2:" in strict.output
