"""`shoparena store …` end to end through the Typer app, on both databases."""

from __future__ import annotations

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.store import open_store
from shoparena.store.records import canonical_bytes
from tests.store.conftest import AGENTS, write_jsonl

runner = CliRunner()


def invoke(*args: str, env: dict | None = None):
    return runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)


def test_ingest_export_invalidate_stats(store_url, records, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_jsonl(run_dir / "trajectories.jsonl", records[:12])
    extra = tmp_path / "extra.jsonl"
    write_jsonl(extra, records[12:])
    with extra.open("ab") as handle:
        handle.write(b"garbage\n")

    result = invoke(
        "store", "ingest", run_dir, extra, "--store", store_url, "--rejects", tmp_path / "rej.jsonl"
    )
    assert result.exit_code == 1, result.output  # a rejected line fails the command, after storing the rest
    assert "read 25 · ingested 24 · duplicates 0 · rejected 1 (not_json 1)" in result.output
    assert f"{extra}:13: [not_json]" in result.output
    rejects = [orjson.loads(line) for line in (tmp_path / "rej.jsonl").read_bytes().splitlines()]
    assert [r["source"] for r in rejects] == [f"{extra}:13"]

    again = invoke("store", "ingest", run_dir, "--store", store_url, "--json")
    assert again.exit_code == 0
    report = orjson.loads(again.stdout)
    assert (report["inserted"], report["duplicates"], report["rejected"]) == (0, 12, 0)

    out = tmp_path / "ok.jsonl"
    result = invoke("store", "export", "--store", store_url, "--success", "--out", out)
    assert result.exit_code == 0, result.output
    successes = [r for r in records if r.score.success]
    assert out.read_bytes() == b"".join(canonical_bytes(r) + b"\n" for r in successes)

    target = records[0]
    result = invoke(
        "store",
        "invalidate",
        target.record_id,
        "--reason",
        "scored on the wrong catalogue",
        "--store",
        store_url,
    )
    assert result.exit_code == 0 and "invalidated" in result.output
    result = invoke("store", "invalidate", "nope", "--reason", "x", "--store", store_url)
    assert result.exit_code == 2 and "not in the store" in result.output

    parquet = tmp_path / "ref.parquet"
    result = invoke(
        "store", "export", "--format", "parquet", "--agent", "reference:pipeline", "--since", "2025-03-01T13:00Z",
        "--min-rule", "0", "--store", store_url, "--out", parquet,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(parquet)
    assert table.column("record_id").to_pylist() == [r.record_id for r in records[1:12]]

    result = invoke(
        "store", "export", "--include-invalidated", "--failure", "--store", store_url, "--out", out
    )
    assert result.exit_code == 0
    assert len(out.read_bytes().splitlines()) == sum(1 for r in records if not r.score.success)

    result = invoke("store", "stats", "--store", store_url, "--json")
    stats = orjson.loads(result.stdout)
    assert (stats["evaluations"], stats["invalidated"]) == (23, 1)
    assert {g["key"] for g in stats["by_agent"]} == {a.agent_id for a in AGENTS}
    table_view = invoke("store", "stats", "--store", store_url)
    assert "23 evaluations" in table_view.output and "by agent" in table_view.output


def test_conflicting_content_fails_the_command(store_url, records, tmp_path):
    original = records[2]
    first = tmp_path / "a.jsonl"
    write_jsonl(first, [original])
    tampered = tmp_path / "b.jsonl"
    write_jsonl(
        tampered, [original.model_copy(update={"score": original.score.model_copy(update={"rule": 0.999})})]
    )
    assert invoke("store", "ingest", first, "--store", store_url).exit_code == 0
    result = invoke("store", "ingest", tampered, "--store", store_url)
    assert result.exit_code == 1
    assert "already stored with different content" in result.output
    assert "conflict with stored records" in result.output
    with open_store(store_url) as store:
        assert store.get(original.record_id) == original


def test_default_store_is_shoparena_db_or_the_environment(records, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHOPARENA_STORE", raising=False)
    path = tmp_path / "in.jsonl"
    write_jsonl(path, records[:2])
    assert invoke("store", "ingest", path).exit_code == 0
    assert (tmp_path / "shoparena.db").is_file()
    elsewhere = tmp_path / "env.db"
    result = invoke("store", "ingest", path, env={"SHOPARENA_STORE": str(elsewhere)})
    assert "ingested 2" in result.output and elsewhere.is_file()


def test_bad_arguments_are_clear(tmp_path):
    out = tmp_path / "x.jsonl"
    store = tmp_path / "s.db"
    result = invoke("store", "export", "--since", "last tuesday", "--store", store, "--out", out)
    assert result.exit_code == 2 and "ISO-8601" in result.output
    result = invoke("store", "export", "--format", "csv", "--store", store, "--out", out)
    assert result.exit_code == 2 and "jsonl, parquet" in result.output
    result = invoke("store", "stats", "--store", "mysql://x@y/z")
    assert result.exit_code == 2 and "SQLite" in result.output


def test_export_format_follows_the_out_extension(store_url, records, tmp_path):
    path = tmp_path / "in.jsonl"
    write_jsonl(path, records[:5])
    assert invoke("store", "ingest", path, "--store", store_url).exit_code == 0
    stored = [r.record_id for r in records[:5]]

    parquet = tmp_path / "t.parquet"
    result = invoke("store", "export", "--store", store_url, "--out", parquet)
    assert result.exit_code == 0, result.output
    assert pq.read_table(parquet).column("record_id").to_pylist() == stored
    for name in ("t.jsonl", "t.json", "t.txt"):  # .json is JSONL too; an unknown extension stays JSONL
        result = invoke("store", "export", "--store", store_url, "--out", tmp_path / name)
        assert result.exit_code == 0, result.output
        assert (tmp_path / name).read_bytes() == b"".join(canonical_bytes(r) + b"\n" for r in records[:5])
    result = invoke("store", "export", "-f", "parquet", "--store", store_url, "--out", tmp_path / "t.pq")
    assert result.exit_code == 0
    assert pq.read_table(tmp_path / "t.pq").num_rows == 5


def test_a_format_that_contradicts_the_extension_is_refused(tmp_path):
    store = tmp_path / "s.db"
    for fmt, name in (("jsonl", "x.parquet"), ("parquet", "x.jsonl"), ("parquet", "x.JSON")):
        result = invoke("store", "export", "-f", fmt, "--store", store, "--out", tmp_path / name)
        assert result.exit_code == 2, result.output
        assert f"--format {fmt} contradicts --out" in result.output and name in result.output
        assert not (tmp_path / name).exists()
    assert not store.exists()  # refused before the store was opened


def test_read_only_commands_refuse_a_store_that_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHOPARENA_STORE", raising=False)
    typo = tmp_path / "nodb.db"
    for args in (
        ["export", "--store", "nodb.db", "--out", "x.jsonl"],
        ["stats", "--store", "nodb.db"],
        ["invalidate", "some-record", "--reason", "x", "--store", "nodb.db"],
    ):
        result = invoke("store", *args)
        assert result.exit_code == 2, (args, result.output)
        [line] = [x for x in result.output.splitlines() if x.startswith("error:")]
        assert str(typo) in line and "no such store" in line and "store ingest" in line
        assert "exported" not in result.output
    assert not typo.exists() and not (tmp_path / "x.jsonl").exists()
    result = invoke("store", "stats")  # the default ./shoparena.db, never ingested into
    assert result.exit_code == 2 and "shoparena.db" in result.output
    assert not (tmp_path / "shoparena.db").exists()
    result = invoke("store", "stats", "--store", "sqlite:///nodb.db")  # a URL too
    assert result.exit_code == 2 and "no such store" in result.output


def test_read_only_commands_open_an_existing_store(store_url, records, tmp_path):
    """The refusal is for missing SQLite files only: an ingested store, and PostgreSQL, open as before."""
    path = tmp_path / "in.jsonl"
    write_jsonl(path, records[:3])
    assert invoke("store", "ingest", path, "--store", store_url).exit_code == 0
    result = invoke("store", "stats", "--store", store_url, "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["evaluations"] == 3


def test_open_store_create_false_is_the_public_api(tmp_path):
    from shoparena.store import StoreURLError

    with pytest.raises(StoreURLError, match="no such store"):
        open_store(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    with open_store(tmp_path / "made.db") as made:  # create=True (the default) still makes one
        assert made.stats().evaluations == 0
    with open_store(tmp_path / "made.db", create=False) as again:
        assert again.stats().evaluations == 0
