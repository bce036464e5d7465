from __future__ import annotations

import base64
import gzip
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

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
    assert [r["line"] for r in rejects] == [2, 3, 4]  # the repeated id 1 on line 4 too
    meta = json.loads((out / "meta.json").read_text())
    assert meta["n_products"] == 1 and meta["n_rejected"] == 2 and meta["n_duplicates"] == 1
    strict = runner.invoke(
        app, ["catalog", "build", "--from", str(source), "--out", str(tmp_path / "s"), "--strict"]
    )
    assert strict.exit_code == 2 and ":2:" in strict.output
    assert not (tmp_path / "s").exists()  # strict mode keeps nothing


# -- `catalog build --from` with broken and hostile input (issue 11) ---------------------------------
def product_line(i: int | str, **fields) -> bytes:
    product = {"product_id": str(i), "shop_id": "9", "title": f"red lamp {i}", "price": 10.0, **fields}
    return orjson.dumps({"id": str(i), "product": product})


def build_from(source, out, *extra):
    """Run the real CLI; a user error must end in a clean exit, never an exception or a traceback."""
    result = runner.invoke(app, ["catalog", "build", "--from", str(source), "--out", str(out), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and "Aborted" not in result.output
    return result


def error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def leftovers(parent, name="cat"):
    """Anything a build left beside its target: staging directories, or the target itself."""
    return sorted(p.name for p in parent.iterdir() if p.name == name or p.name.startswith(f".{name}."))


def rejects_of(out) -> list[dict]:
    return [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]


def meta_of(out) -> dict:
    return json.loads((out / "meta.json").read_text())


def test_a_non_utf8_byte_costs_its_line_only(tmp_path):
    bad = b'{"id": "2", "product": {"product_id": "2", "shop_id": "9", "title": "caf\xe9", "price": 1}}'
    source = tmp_path / "cat.jsonl"
    source.write_bytes(b"\n".join([product_line(1), bad, product_line(3)]) + b"\n")
    result = build_from(source, tmp_path / "cat")
    assert result.exit_code == 0, result.output
    assert "line 2: not valid UTF-8: byte 0xe9" in result.output
    [reject] = rejects_of(tmp_path / "cat")
    assert reject["line"] == 2 and "UTF-8" in reject["reason"]
    assert base64.b64decode(reject["raw_base64"]) == bad  # the line itself is kept, byte for byte
    assert meta_of(tmp_path / "cat")["n_products"] == 2


def test_a_truncated_gzip_is_reported_as_such_and_builds_nothing(tmp_path):
    data = gzip.compress(b"\n".join(product_line(i) for i in range(5000)) + b"\n")
    source = tmp_path / "cat.jsonl.gz"
    source.write_bytes(data[: len(data) // 2])
    result = build_from(source, tmp_path / "cat")
    assert result.exit_code != 0
    [line] = error_lines(result)
    assert "truncated gzip" in line and "complete line(s) read" in line and "nothing was built" in line
    read = int(line.split("(")[1].split(" complete")[0].replace(",", ""))
    assert 0 < read < 5000
    assert leftovers(tmp_path) == []


def test_corrupt_gzip_data_is_reported_with_the_lines_read(tmp_path):
    data = bytearray(gzip.compress(b"\n".join(product_line(i) for i in range(3000)) + b"\n"))
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    source = tmp_path / "cat.jsonl.gz"
    source.write_bytes(bytes(data))
    result = build_from(source, tmp_path / "cat")
    assert result.exit_code != 0
    [line] = error_lines(result)
    assert "gzip" in line and "complete line(s) read" in line
    assert leftovers(tmp_path) == []


def _not_gzip(folder):
    (folder / "cat.jsonl.gz").write_bytes(product_line(1))
    return folder / "cat.jsonl.gz"


def _a_directory(folder):
    (folder / "in").mkdir()
    return folder / "in"


@pytest.mark.parametrize(
    ("make_source", "expected"),
    [
        (_not_gzip, "is named .gz but is not gzip"),
        (_a_directory, "is a directory"),
        (lambda d: d / "nope", "no such file"),
    ],
    ids=["gz-not-gzip", "directory", "missing"],
)
def test_unreadable_inputs_are_one_line_errors(tmp_path, make_source, expected):
    result = build_from(make_source(tmp_path), tmp_path / "cat")
    assert result.exit_code != 0
    [line] = error_lines(result)
    assert expected in line
    assert leftovers(tmp_path) == []


def test_out_pointing_at_a_file_is_refused_and_the_file_kept(tmp_path):
    source = tmp_path / "cat.jsonl"
    source.write_bytes(product_line(1))
    target = tmp_path / "cat"
    target.write_text("my notes")
    for extra in ([], ["--force"]):
        result = build_from(source, target, *extra)
        assert result.exit_code != 0
        [line] = error_lines(result)
        assert "is not a directory" in line
        assert target.read_text() == "my notes"


def test_a_gzip_without_the_gz_name_is_read_by_its_content(tmp_path):
    source = tmp_path / "cat.jsonl"
    source.write_bytes(gzip.compress(product_line(1) + b"\n" + product_line(2)))
    assert build_from(source, tmp_path / "cat").exit_code == 0
    assert meta_of(tmp_path / "cat")["n_products"] == 2


def test_force_replaces_a_catalogue_only_with_a_finished_one(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"\n".join(product_line(i) for i in range(5)))
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"\n".join(product_line(i) for i in range(100, 103)))
    broken = tmp_path / "broken.jsonl.gz"
    data = gzip.compress(b"\n".join(product_line(i) for i in range(4000)))
    broken.write_bytes(data[: len(data) // 2])
    out = tmp_path / "cat"

    assert build_from(broken, out).exit_code != 0  # a failed first build leaves nothing ...
    assert leftovers(tmp_path) == []
    assert build_from(good, out).exit_code == 0  # ... so the next one needs no --force
    assert build_from(broken, out, "--force").exit_code != 0  # a failed rebuild keeps the old one
    assert meta_of(out)["source"] == str(good) and meta_of(out)["n_products"] == 5
    ok = runner.invoke(app, ["search", str(out), "red lamp", "--json"])
    assert ok.exit_code == 0 and len(json.loads(ok.stdout)) == 5
    assert build_from(other, out, "--force").exit_code == 0
    assert meta_of(out)["source"] == str(other) and meta_of(out)["n_products"] == 3
    assert leftovers(tmp_path) == ["cat"]
    plain = tmp_path / "plain"
    plain.mkdir()  # a finished catalogue has a plain directory's mode, not the staging's private 0700
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_a_killed_build_leaves_a_staging_directory_that_the_next_build_removes(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".cat.building-{dead.pid}-abc"
    (stale / "index").mkdir(parents=True)
    source = tmp_path / "cat.jsonl"
    source.write_bytes(product_line(1))
    assert build_from(source, tmp_path / "cat").exit_code == 0
    assert leftovers(tmp_path) == ["cat"]


def test_a_duplicate_id_is_a_reject_with_its_line_not_a_silent_loss(tmp_path):
    source = tmp_path / "cat.jsonl"
    lines = [product_line(1), product_line(2), b"", product_line(1, title="blue lamp"), product_line(3)]
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "cat"
    result = build_from(source, out)
    assert result.exit_code == 0
    [reject] = rejects_of(out)
    assert reject["line"] == 4
    assert reject["reason"] == "duplicate product_id '1': line 1 has it (the first one is kept)"
    assert reject["product"]["title"] == "blue lamp"  # what was refused is kept in full
    meta = meta_of(out)
    assert (meta["n_products"], meta["n_duplicates"], meta["n_blank"], meta["n_lines_read"]) == (3, 1, 1, 5)
    assert "1 duplicate id(s) skipped" in result.output
    strict = build_from(source, tmp_path / "strict", "--strict")
    assert strict.exit_code != 0 and ":4: duplicate product_id" in strict.output
    assert leftovers(tmp_path, "strict") == []


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_byte_order_mark_does_not_cost_line_one(tmp_path, compress):
    data = b"\xef\xbb\xbf" + product_line(1) + b"\r\n" + product_line(2) + b"\r\n"
    source = tmp_path / ("cat.jsonl.gz" if compress else "cat.jsonl")
    source.write_bytes(gzip.compress(data) if compress else data)
    result = build_from(source, tmp_path / "cat")
    assert result.exit_code == 0, result.output
    meta = meta_of(tmp_path / "cat")
    assert meta["n_products"] == 2 and meta["n_rejected"] == 0
    assert rejects_of(tmp_path / "cat") == []


@pytest.mark.parametrize(
    "content",
    [b"", b"\n\n  \n", b"[1, 2]\n{oops\n\x00\x00\n"],
    ids=["empty", "blank-lines", "all-garbage"],
)
def test_input_with_no_product_is_an_error_not_an_empty_catalogue(tmp_path, content):
    source = tmp_path / "cat.jsonl"
    source.write_bytes(content)
    result = build_from(source, tmp_path / "cat")
    assert result.exit_code != 0
    [line] = error_lines(result)
    assert "holds no usable product" in line
    if b"oops" in content:
        assert "line 1: expected a JSON object, got list" in result.output
        assert "line 2: invalid JSON" in result.output
    assert leftovers(tmp_path) == []


HOSTILE = [
    (b"[1, 2, 3]", "expected a JSON object, got list"),
    (b'"just a string"', "expected a JSON object, got str"),
    (b"\x00\x00\x00", "invalid JSON"),
    (
        b'{"id": "n1", "product": {"product_id": "n1", "shop_id": "9", "title": "a\\u0000b", "price": 1}}',
        "NUL",
    ),
    (
        b'{"id": "s1", "product": {"product_id": "s1", "shop_id": "9", "title": "\\ud800", "price": 1}}',
        "invalid JSON",
    ),
    (product_line("p1", price=True), "product.price: expected a number, not a boolean"),
    (product_line("p2", price="cheap"), "product.price"),
    (product_line("p3", price=-1), "product.price"),
    (b'{"product_id": "p4", "shop_id": "9", "title": "x", "price": 1e999}', "invalid JSON"),
    (product_line("p5", sold_count=-3), "product.sold_count"),
    (product_line("p6", sold_count=2**63), "product.sold_count"),
    (product_line("p7", title=5), "product.title"),
    (product_line("p8", service="COD"), "product.service"),
    (product_line("p9", attributes={"color": "red"}), "product.attributes.color"),
    (product_line("9" * 600), "product.product_id: String should have at most 100 characters"),
    (b'{"id": {"x": 1}, "product": {"shop_id": "9", "title": "x", "price": 1}}', "'id' must be a string"),
    (b"[" * 5000 + b"]" * 5000, "invalid JSON"),
]


def test_hostile_lines_are_each_a_located_reject_and_the_rest_is_built(tmp_path):
    huge = (
        b'{"id": "h", "product": {"product_id": "h", "shop_id": "9", "title": "'
        + b"x" * (5 * 2**20)
        + b'", "price": 1}}'
    )
    lines = [product_line("first")]
    for raw, _ in HOSTILE:
        lines.append(raw)
    lines += [huge, product_line("last")]
    source = tmp_path / "cat.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "cat"
    result = build_from(source, out)
    assert result.exit_code == 0, result.output
    rejects = {r["line"]: r for r in rejects_of(out)}
    for offset, (raw, reason) in enumerate(HOSTILE, start=2):
        assert reason in rejects[offset]["reason"], (offset, rejects[offset])
        kept = rejects[offset].get("raw") or base64.b64decode(rejects[offset]["raw_base64"]).decode("latin-1")
        assert (
            kept.encode("utf-8", "surrogatepass") == raw
            or base64.b64decode(rejects[offset].get("raw_base64", "")) == raw
        )
    huge_line = len(HOSTILE) + 2
    assert "over the 4,194,304-byte limit" in rejects[huge_line]["reason"]
    meta = meta_of(out)
    assert meta["n_products"] == 2 and meta["n_rejected"] == len(HOSTILE) + 1
    assert (
        meta["n_lines_read"]
        == meta["n_products"] + meta["n_rejected"] + meta["n_duplicates"] + meta["n_blank"]
    )
    hits = json.loads(runner.invoke(app, ["product", str(out), "first,last", "--json"]).stdout)
    assert [h["product_id"] for h in hits] == ["first", "last"]


def test_the_installed_command_reports_a_truncated_gzip_without_a_traceback(tmp_path):
    """Through the real entry point (click turns a stray EOFError into a bare 'Aborted!')."""
    data = gzip.compress(b"\n".join(product_line(i) for i in range(3000)))
    source = tmp_path / "cat.jsonl.gz"
    source.write_bytes(data[: len(data) // 3])
    script = Path(sys.executable).with_name("shoparena")
    done = subprocess.run(
        [str(script), "catalog", "build", "--from", str(source), "--out", str(tmp_path / "cat")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "truncated gzip" in done.stderr and "Traceback" not in done.stderr and "Aborted" not in done.stderr
    assert leftovers(tmp_path) == []


def test_force_through_a_symlinked_out_replaces_what_it_points_at(tmp_path):
    source = tmp_path / "cat.jsonl"
    source.write_bytes(product_line(1))
    real = tmp_path / "data" / "cat[v1]"  # glob characters in the name, too
    assert build_from(source, real).exit_code == 0
    link = tmp_path / "cat"
    link.symlink_to(real, target_is_directory=True)
    source.write_bytes(product_line(1) + b"\n" + product_line(2))
    assert build_from(source, link, "--force").exit_code == 0
    assert link.is_symlink() and meta_of(link)["n_products"] == 2
    assert sorted(p.name for p in real.parent.iterdir()) == ["cat[v1]"]


# -- `--backend`, push-es errors, stats and build refusals (store/CLI QA) ----------------------------
ES_URL = os.environ.get("SHOPARENA_ES_URL")
DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


def small_catalogue(tmp_path, n=5):
    source = tmp_path / "cat.jsonl"
    source.write_bytes(b"\n".join(product_line(i) for i in range(n)) + b"\n")
    out = tmp_path / "cat"
    assert build_from(source, out).exit_code == 0
    return out


def one_line_error(result) -> str:
    """A user error: non-zero exit, no traceback, and exactly one `error:` line."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    [line] = error_lines(result)
    return line


def test_default_backend_output_is_unchanged_and_tantivy_names_it(built):
    plain = runner.invoke(app, ["search", str(built), "wireless earbuds", "--json"])
    named = runner.invoke(app, ["search", str(built), "wireless earbuds", "--json", "--backend", "tantivy"])
    assert plain.exit_code == named.exit_code == 0
    assert plain.stdout == named.stdout
    from shoparena.index.catalog_dir import open_catalog

    catalog = open_catalog(built)
    try:
        assert json.loads(plain.stdout) == catalog.find_product("wireless earbuds")
    finally:
        catalog.close()
    ids = ",".join(h["product_id"] for h in json.loads(plain.stdout)[:2])
    a = runner.invoke(app, ["product", str(built), ids, "--json"])
    b = runner.invoke(app, ["product", str(built), ids, "--json", "--backend", "tantivy"])
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout


@pytest.mark.parametrize("command", ["search", "product"])
def test_an_unreachable_elasticsearch_is_one_line_naming_the_url(tmp_path, command):
    out = small_catalogue(tmp_path)
    result = runner.invoke(app, [command, str(out), "1", "--backend", "elasticsearch", "--url", DEAD_URL])
    line = one_line_error(result)
    assert f"cannot reach Elasticsearch at {DEAD_URL}: Connection refused" in line
    assert "check that the server is running" in line


def test_elasticsearch_without_push_or_url_says_what_to_do(tmp_path):
    out = small_catalogue(tmp_path)
    line = one_line_error(runner.invoke(app, ["search", str(out), "lamp", "--backend", "elasticsearch"]))
    assert "never pushed to Elasticsearch" in line and "push-es" in line and "--url" in line


def test_the_url_recorded_by_push_es_is_the_default_and_url_overrides_it(tmp_path):
    out = small_catalogue(tmp_path)
    (out / "es.json").write_bytes(orjson.dumps({"url": DEAD_URL, "index": "mine"}))
    line = one_line_error(runner.invoke(app, ["search", str(out), "lamp", "--backend", "elasticsearch"]))
    assert DEAD_URL in line
    other = "http://127.0.0.1:1"
    line = one_line_error(
        runner.invoke(app, ["search", str(out), "lamp", "--backend", "elasticsearch", "--url", other])
    )
    assert other in line and DEAD_URL not in line


def test_a_server_that_is_not_elasticsearch_is_named(tmp_path):
    import http.server
    import threading

    class NotElastic(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>a web page</html>")

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotElastic)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        out = small_catalogue(tmp_path)
        line = one_line_error(
            runner.invoke(app, ["search", str(out), "lamp", "--backend", "elasticsearch", "--url", url])
        )
        assert f"Elasticsearch at {url}" in line and "not Elasticsearch" in line
        line = one_line_error(runner.invoke(app, ["catalog", "push-es", str(out), "--url", url]))
        assert url in line and "not Elasticsearch" in line
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert not (out / "es.json").exists()


def test_backend_options_are_checked(tmp_path):
    out = small_catalogue(tmp_path)
    line = one_line_error(runner.invoke(app, ["search", str(out), "lamp", "--backend", "solr"]))
    assert "--backend 'solr'" in line and "tantivy, elasticsearch" in line
    line = one_line_error(runner.invoke(app, ["search", str(out), "lamp", "--url", DEAD_URL]))
    assert "--backend elasticsearch" in line


@pytest.mark.parametrize("url", [DEAD_URL, "127.0.0.1:9200"], ids=["refused", "no-scheme"])
def test_push_es_to_a_bad_url_is_one_line_and_no_progress_bar(tmp_path, url):
    out = small_catalogue(tmp_path)
    result = runner.invoke(app, ["catalog", "push-es", str(out), "--url", url])
    line = one_line_error(result)
    assert url in line
    assert "pushing" not in result.output  # refused before the progress bar
    assert not (out / "es.json").exists()


def test_push_es_takes_the_url_from_the_environment(tmp_path):
    out = small_catalogue(tmp_path)
    result = runner.invoke(app, ["catalog", "push-es", str(out)], env={"SHOPARENA_ES_URL": DEAD_URL})
    assert DEAD_URL in one_line_error(result)


@pytest.mark.es
@pytest.mark.skipif(not ES_URL, reason="set SHOPARENA_ES_URL to run against a live Elasticsearch/OpenSearch")
def test_live_push_es_then_search_and_product_with_the_elasticsearch_backend(tmp_path):
    out = small_catalogue(tmp_path, n=30)
    pushed = runner.invoke(
        app, ["catalog", "push-es", str(out), "--url", ES_URL, "--index", "shoparena-cli-test"]
    )
    assert pushed.exit_code == 0, pushed.output
    assert "pushed 30 products" in pushed.output
    es = runner.invoke(app, ["search", str(out), "red lamp", "--json", "--backend", "elasticsearch"])
    assert es.exit_code == 0, es.output
    embedded = json.loads(runner.invoke(app, ["search", str(out), "red lamp", "--json"]).stdout)
    hits = json.loads(es.stdout)
    assert len(hits) == len(embedded) == 10
    assert set(hits[0]) == set(embedded[0])
    ids = ",".join(h["product_id"] for h in hits[:2])
    a = runner.invoke(app, ["product", str(out), ids, "--json", "--backend", "elasticsearch"])
    b = runner.invoke(app, ["product", str(out), ids, "--json"])
    assert a.exit_code == 0 and a.stdout == b.stdout
    missing = runner.invoke(
        app, ["search", str(out), "lamp", "--backend", "elasticsearch", "--index", "shoparena-no-such-index"]
    )
    line = one_line_error(missing)
    assert "no index 'shoparena-no-such-index'" in line


def test_stats_of_an_upstream_build_shows_no_generator_or_seed(tmp_path, built):
    out = small_catalogue(tmp_path)
    result = runner.invoke(app, ["catalog", "stats", str(out)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "None" not in result.output
    assert "generator" not in result.output and "seed" not in result.output
    assert "source" in result.output
    generated = runner.invoke(app, ["catalog", "stats", str(built)], env={"COLUMNS": "120"})
    assert "generator" in generated.output and "seed" in generated.output


@pytest.mark.parametrize("source", ["--products", "--from"])
def test_build_over_a_catalogue_refuses_before_any_progress_bar(tmp_path, source):
    out = small_catalogue(tmp_path)
    args = ["--products", "3000"] if source == "--products" else ["--from", str(tmp_path / "cat.jsonl")]
    result = runner.invoke(app, ["catalog", "build", *args, "--out", str(out)])
    line = one_line_error(result)
    assert line == f"error: {out} is not empty; pass --force to replace it"
    assert "generating" not in result.output and "indexing" not in result.output
    assert "0/3000" not in result.output
