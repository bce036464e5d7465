"""`shoparena store …` end to end through the Typer app, on both databases."""

from __future__ import annotations

import orjson
import pyarrow.parquet as pq
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
