"""`shoparena store ingest` on broken and hostile input, through the CLI, on SQLite and PostgreSQL.

Every case ends the same way: the good records are stored, each bad input is a reject naming its file,
line, reason code and reason (in the --rejects file and the summary), and the command exits 1. Both
dialects take and refuse exactly the same records.
"""

from __future__ import annotations

import gzip
import json

import orjson
from sqlalchemy import text
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.store import REASONS, open_store
from shoparena.store.records import canonical_bytes
from tests.store.conftest import write_jsonl

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def ingest(store_url, tmp_path, *inputs, json_report=True):
    rejects = tmp_path / "rejects.jsonl"
    args = ["store", "ingest", *inputs, "--store", store_url, "--rejects", rejects]
    result = invoke(*args, *(["--json"] if json_report else []))
    lines = rejects.read_bytes().splitlines() if rejects.exists() else []
    report = orjson.loads(result.stdout) if json_report and result.stdout.strip() else None
    return result, report, [orjson.loads(line) for line in lines]


def variant(record, path: str, value, record_id: str) -> bytes:
    """The record's canonical JSON with one field (dotted path) set to `value`, under a new id."""
    data = orjson.loads(canonical_bytes(record))
    data["record_id"] = record_id
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[last] = value
    return json.dumps(data, allow_nan=True).encode()


def test_missing_inputs_directories_and_empty_files_fail_the_command(store_url, records, tmp_path):
    good = tmp_path / "good.jsonl"
    write_jsonl(good, records[:3])
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n  \n\n")
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    missing = tmp_path / "missing.jsonl"

    result, report, rejects = ingest(store_url, tmp_path, good, missing, folder, empty, blank)
    assert result.exit_code == 1
    assert (report["seen"], report["inserted"], report["rejected"]) == (7, 3, 4)
    assert report["rejected_by_reason"] == {"unreadable": 2, "empty_input": 2}
    assert [(r["file"], r.get("line"), r["kind"]) for r in rejects] == [
        (str(missing), None, "unreadable"),
        (str(folder), None, "unreadable"),
        (str(empty), None, "empty_input"),
        (str(blank), None, "empty_input"),
    ]
    assert rejects[0]["reason"] == "no such file or directory"
    assert "without trajectories.jsonl" in rejects[1]["reason"]
    assert "4 rejected of 7 read; 3 new record(s) stored" in result.stderr
    with open_store(store_url) as store:
        assert store.record_ids() == [r.record_id for r in records[:3]]

    # the human summary: counts per reason, each reject located, a non-zero exit
    again = invoke("store", "ingest", good, missing, "--store", store_url)
    assert again.exit_code == 1
    assert "read 4 · ingested 0 · duplicates 3 · rejected 1 (unreadable 1)" in again.stdout
    assert f"{missing}: [unreadable] no such file or directory" in again.stderr
    assert "Traceback" not in again.output


def test_all_garbage_and_binary_input_is_rejected_line_by_line(store_url, records, tmp_path):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"hello\n{not json}\n\x00\x00\x00\x00\n\x89PNG\r\n\x1a\n\xff\xfe\xfd\n42\n")
    result, report, rejects = ingest(store_url, tmp_path, garbage)
    assert result.exit_code == 1
    assert report["inserted"] == 0
    assert report["rejected_by_reason"] == {"not_json": 6, "invalid_record": 1}
    assert [r["line"] for r in rejects] == [1, 2, 3, 4, 5, 6, 7]
    assert rejects[2]["reason"] == "binary data (NUL bytes), not a line of JSON"
    assert "not a trajectory record object" in rejects[6]["reason"]
    with open_store(store_url) as store:
        assert store.count() == 0


def test_files_in_other_formats_are_named_as_such(store_url, records, tmp_path):
    array = tmp_path / "array.json"
    array.write_bytes(
        orjson.dumps([orjson.loads(canonical_bytes(r)) for r in records[:2]], option=orjson.OPT_INDENT_2)
    )
    gz = tmp_path / "run.jsonl.gz"
    gz.write_bytes(gzip.compress(canonical_bytes(records[0]) + b"\n"))
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes((canonical_bytes(records[0]) + b"\n").decode().encode("utf-16"))
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(
        b"\xef\xbb\xbf" + canonical_bytes(records[3]) + b"\n" + canonical_bytes(records[4]) + b"\n"
    )
    result, report, rejects = ingest(store_url, tmp_path, array, gz, utf16, bom)
    assert result.exit_code == 1
    assert (report["inserted"], report["rejected_by_reason"]) == (2, {"not_jsonl": 3})
    reasons = {r["file"]: r["reason"] for r in rejects}
    assert reasons[str(array)].startswith("a JSON array, not JSONL")
    assert reasons[str(gz)].startswith("gzip-compressed data")
    assert reasons[str(utf16)].startswith("UTF-16 text")
    with open_store(store_url) as store:  # the byte-order mark did not cost line 1
        assert store.record_ids() == [records[3].record_id, records[4].record_id]


def test_a_huge_line_is_skipped_without_losing_its_neighbours(records, tmp_path):
    """One line over the 64 MiB limit (reading is the same for both dialects, so SQLite only)."""
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(canonical_bytes(records[0]) + b"\n")
        handle.write(b'{"record_id": "' + b"x" * (65 * 2**20) + b'"}\n')
        handle.write(canonical_bytes(records[1]) + b"\n")
    result, report, rejects = ingest(str(tmp_path / "s.db"), tmp_path, path)
    assert result.exit_code == 1
    assert (report["inserted"], report["rejected_by_reason"]) == (2, {"line_too_long": 1})
    assert rejects[0]["source"] == f"{path}:2"
    assert "longer than 67,108,864 bytes" in rejects[0]["reason"]


HOSTILE = [
    ("sample", "3", "invalid_record", "sample: Input should be a valid integer"),
    ("sample", True, "invalid_record", "sample: Input should be a valid integer"),
    ("sample", 2**40, "unstorable", "sample 1099511627776 is outside the store's 32-bit integer range"),
    ("score", ["not", "a", "dict"], "invalid_record", "score: Input should be an object"),
    ("score.rule", "high", "invalid_record", "score.rule: Input should be a valid number"),
    ("schema_version", "shoparena.trajectory/99", "unknown_schema", "is not one this store reads"),
    ("timings.wall_s", float("nan"), "unstorable", "timings.wall_s is nan: JSON has no NaN or Infinity"),
    ("score.rule", float("inf"), "unstorable", "score.rule is inf"),
    ("messages.0.content", 10**30, "unstorable", "cannot be written as canonical JSON"),
    ("agent.agent_id", "agent\x00id", "unstorable", "agent_id 'agent\\x00id' holds a NUL character"),
    ("agent.agent_id", "a" * 300, "unstorable", "agent_id is 300 characters long"),
    ("timings.started_at", "0001-01-01T00:00:00+05:00", "unstorable", "not an ISO-8601 time"),
]


def test_hostile_records_are_rejected_alike_on_both_dialects(store_url, records, tmp_path):
    base = records[0]
    path = tmp_path / "hostile.jsonl"
    lines = [canonical_bytes(base)]
    lines += [variant(base, field, value, f"hostile-{i}") for i, (field, value, *_rest) in enumerate(HOSTILE)]
    deep = orjson.loads(canonical_bytes(base))
    deep["record_id"] = "deep"
    deep_text = orjson.dumps(deep).replace(
        b'"messages":[', b'"messages":[' + b"[" * 400 + b"]" * 400 + b",", 1
    )
    lines.append(deep_text)
    lines.append(
        variant(base, "problem.query", "PLACEHOLDER", "surrogate").replace(b"PLACEHOLDER", b"\\ud800 x")
    )
    lines.append(canonical_bytes(records[1]))
    path.write_bytes(b"\n".join(lines) + b"\n")

    result, report, rejects = ingest(store_url, tmp_path, path)
    assert result.exit_code == 1
    assert report["inserted"] == 2, [(r["line"], r["kind"]) for r in rejects]
    by_line = {r["line"]: r for r in rejects}
    for offset, (_field, _value, kind, reason) in enumerate(HOSTILE):
        reject = by_line[offset + 2]
        assert reject["kind"] == kind, (offset, reject)
        assert reason in reject["reason"], (offset, reject)
    assert (
        by_line[len(HOSTILE) + 2]["kind"] == "not_json"
        and "recursion limit" in by_line[len(HOSTILE) + 2]["reason"]
    )
    assert by_line[len(HOSTILE) + 3]["kind"] == "not_json"
    assert set(report["rejected_by_reason"]) <= set(REASONS)
    with open_store(store_url) as store:
        assert store.record_ids() == [base.record_id, records[1].record_id]


def test_nul_in_free_text_is_stored_and_exported_exactly_on_both(store_url, records, tmp_path):
    messages = [*records[0].messages, {"role": "assistant", "content": "a\x00b"}]
    odd = records[0].model_copy(update={"messages": messages})
    path = tmp_path / "nul.jsonl"
    write_jsonl(path, [odd])
    result, report, _ = ingest(store_url, tmp_path, path)
    assert result.exit_code == 0 and report["inserted"] == 1
    out = tmp_path / "out.jsonl"
    assert invoke("store", "export", "--store", store_url, "--out", out).exit_code == 0
    assert out.read_bytes() == path.read_bytes()
    with open_store(store_url) as store:
        assert store.get(odd.record_id) == odd
        if store.dialect == "postgresql":  # the queryable jsonb copy spells the NUL out
            with store.engine.connect() as connection:
                content = connection.execute(
                    text("SELECT record->'messages'->-1->>'content' FROM evaluations")
                ).scalar_one()
            assert content == "a\\u0000b"


def test_the_rejects_file_never_overwrites_an_input(records, tmp_path):
    path = tmp_path / "in.jsonl"
    write_jsonl(path, records[:2])
    before = path.read_bytes()
    result = invoke("store", "ingest", path, "--rejects", path, "--store", tmp_path / "s.db")
    assert result.exit_code == 2 and "is also an input" in result.stderr
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "trajectories.jsonl", records[:1])
    result = invoke(
        "store", "ingest", run, "--rejects", run / "trajectories.jsonl", "--store", tmp_path / "s.db"
    )
    assert result.exit_code == 2 and "is also an input" in result.stderr
    assert path.read_bytes() == before and (run / "trajectories.jsonl").stat().st_size > 0
    result = invoke("store", "ingest", path, "--rejects", tmp_path, "--store", tmp_path / "s.db")
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_a_record_the_database_refuses_is_isolated_not_fatal(store, records, monkeypatch):
    """A refusal the checks did not foresee costs only that record: the batch is retried one by one."""
    import shoparena.store.ingest as ingest_module

    real_prepare = ingest_module.prepare

    def prepare(record, *args):
        prepared = real_prepare(record, *args)
        if record.record_id == records[2].record_id:
            prepared.row["agent_id"] = None  # NOT NULL: both databases refuse it
        return prepared

    monkeypatch.setattr(ingest_module, "prepare", prepare)
    report = store.ingest(records[:5])
    assert (report.inserted, report.rejected) == (4, 1)
    assert report.rejected_by_reason == {"refused_by_database": 1}
    assert report.rejects[0].record_id == records[2].record_id
    assert "the database refused record" in report.rejects[0].reason
    assert set(store.record_ids()) == {r.record_id for r in records[:5]} - {records[2].record_id}
