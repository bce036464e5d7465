"""Ingest: idempotent, conflict-refusing, batch-tolerant of bad lines, and one row per record in bulk."""

from __future__ import annotations

import math
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store import RecordConflictError, RecordFilter, StoreError
from shoparena.store.records import canonical_bytes
from tests.store.conftest import copies, write_jsonl


def test_the_same_records_twice_are_one_row_each(store, records):
    first = store.ingest(records)
    assert (first.inserted, first.duplicates, first.rejected) == (len(records), 0, 0)
    again = store.ingest(records)
    assert (again.inserted, again.duplicates, again.rejected) == (0, len(records), 0)
    assert store.count() == len(records)
    assert store.record_ids() == [r.record_id for r in records]


def test_duplicates_inside_one_batch_are_counted_once(store, records):
    report = store.ingest([records[0], records[1], records[0], records[0]])
    assert (report.inserted, report.duplicates) == (2, 2)
    assert store.count() == 2


def test_changed_content_under_a_stored_id_is_a_conflict_not_an_overwrite(store, records):
    original = records[3]
    assert store.add(original) is True
    assert store.add(original) is False
    tampered = original.model_copy(
        update={"score": original.score.model_copy(update={"success": True, "rule": 1.0})}
    )
    report = store.ingest([tampered, records[4]])
    assert (report.inserted, report.conflicts, report.rejected) == (1, 1, 1)
    conflict = report.rejects[0]
    assert conflict.conflict and conflict.record_id == original.record_id
    assert "already stored with different content" in conflict.reason
    with pytest.raises(RecordConflictError, match=original.record_id):
        report.raise_for_conflicts()
    with pytest.raises(RecordConflictError, match="append-only"):
        store.add(tampered)
    assert store.get(original.record_id) == original


def test_conflicts_inside_one_batch_keep_the_first(store, records):
    original = records[5]
    tampered = original.model_copy(
        update={"sample": 0, "score": original.score.model_copy(update={"rule": 0.123})}
    )
    report = store.ingest([original, tampered])
    assert (report.inserted, report.conflicts) == (1, 1)
    assert store.get(original.record_id) == original


def test_bulk_ingest_of_thousands_is_one_row_each(store, records, tmp_path):
    bulk = [
        copy for record in records[:3] for copy in copies(record, 1000, f"bulk-{record.problem.problem_id}")
    ]
    assert len({r.record_id for r in bulk}) == 3000
    path = tmp_path / "bulk.jsonl"
    write_jsonl(path, bulk)
    seen = []
    report = store.ingest_paths([path], batch_size=700, progress=seen.append)
    assert (report.inserted, report.duplicates, report.rejected) == (3000, 0, 0)
    assert sum(seen) == 3000
    assert store.count() == 3000
    again = store.ingest_paths([path], batch_size=700)
    assert (again.inserted, again.duplicates) == (0, 3000)
    assert store.count() == 3000


def test_run_directories_and_files_with_bad_lines(store, records, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_jsonl(run_dir / "trajectories.jsonl", records[:5])
    mixed = tmp_path / "mixed.jsonl"
    good = [canonical_bytes(r) for r in records[5:8]]
    missing_field = canonical_bytes(records[8]).replace(b'"agent_id":', b'"agent_name":', 1)
    with mixed.open("wb") as handle:
        handle.write(good[0] + b"\n")
        handle.write(b"{not json\n")
        handle.write(b"\n")
        handle.write(missing_field + b"\n")
        handle.write(good[1] + b"\n")
        handle.write(b'{"record_id": "x"}\n')
        handle.write(good[2] + b"\n")
        handle.write(canonical_bytes(records[9])[:200])  # the interrupted last write of a run
    (tmp_path / "empty_dir").mkdir()
    rejects = []
    report = store.ingest_paths(
        [run_dir, mixed, tmp_path / "empty_dir", tmp_path / "nope.jsonl"], on_reject=rejects.append
    )
    assert (report.inserted, report.rejected, report.seen) == (8, 6, 14)
    by_source = {r.source: r.reason for r in rejects}
    assert set(by_source) == {
        f"{mixed}:2",
        f"{mixed}:4",
        f"{mixed}:6",
        f"{mixed}:8",
        str(tmp_path / "empty_dir"),
        str(tmp_path / "nope.jsonl"),
    }
    assert by_source[f"{mixed}:2"].startswith("not JSON: ")
    assert "agent.agent_id: Field required" in by_source[f"{mixed}:4"]
    assert "agent.agent_name" in by_source[f"{mixed}:4"]
    assert by_source[f"{mixed}:8"].startswith("last line cut short")
    assert "without trajectories.jsonl" in by_source[str(tmp_path / "empty_dir")]
    assert by_source[str(tmp_path / "nope.jsonl")] == "no such file or directory"
    assert store.record_ids() == [r.record_id for r in records[:8]]


def test_values_the_database_cannot_hold_are_rejected_alike_on_both(store, records):
    long_agent = records[0].agent.model_copy(update={"agent_id": "a" * 300})
    too_long = records[0].model_copy(update={"agent": long_agent, "record_id": "long-agent"})
    bad_time = records[1].model_copy(
        update={
            "timings": records[1].timings.model_copy(update={"started_at": "yesterday"}),
            "record_id": "t",
        }
    )
    report = store.ingest([too_long, bad_time, records[2]])
    assert (report.inserted, report.rejected) == (1, 2)
    reasons = {r.source: r.reason for r in report.rejects}
    assert "agent_id is 300 characters long" in reasons["record:long-agent"]
    assert "not an ISO-8601 time" in reasons["record:t"]
    with pytest.raises(StoreError, match="300 characters"):
        store.add(too_long)


def test_nul_characters_in_text_are_stored_exactly_on_both(store, records, tmp_path):
    """A NUL in model output or a tool result is kept on both dialects and exported byte for byte."""
    messages = [*records[0].messages, {"role": "assistant", "content": "odd\x00byte", "k\x00ey": ["\x00"]}]
    odd = records[0].model_copy(update={"messages": messages})
    report = store.ingest([odd])
    assert (report.inserted, report.rejected) == (1, 0), report.rejects
    assert store.get(odd.record_id) == odd
    out = tmp_path / "out.jsonl"
    store.export(out)
    assert out.read_bytes() == canonical_bytes(odd) + b"\n"
    assert store.ingest([odd]).duplicates == 1


def test_records_round_trip_through_the_model(store, records):
    store.ingest(records)
    for record in records:
        stored = store.get(record.record_id)
        assert isinstance(stored, TrajectoryRecord)
        assert stored == record
    assert store.get("no-such-record") is None


def test_a_rival_ingester_between_lookup_and_insert_is_classified_not_overwritten(
    pg_store_url, records, monkeypatch
):
    """Another writer stores some ids after our lookup: same content → duplicate, other → conflict.

    PostgreSQL only: on SQLite the lookup and the insert hold the write lock together, so no rival can
    come between them (the concurrent-ingesters test covers SQLite).
    """
    from shoparena.store import ingest, open_store

    store_url = pg_store_url
    store = open_store(store_url)

    mine = records[:6]
    rival_same = records[0]
    rival_other = records[1].model_copy(update={"score": records[1].score.model_copy(update={"rule": 0.5})})
    real_lookup = ingest._stored_hashes
    calls = []

    def lookup_then_rival_writes(connection, record_ids):
        found = real_lookup(connection, record_ids)
        if not calls:
            calls.append(record_ids)  # before the rival's own lookups come through here
            with open_store(store_url) as rival:
                assert rival.ingest([rival_same, rival_other]).inserted == 2
        return found

    monkeypatch.setattr(ingest, "_stored_hashes", lookup_then_rival_writes)
    report = store.ingest(mine)
    assert (report.inserted, report.duplicates, report.conflicts) == (4, 1, 1)
    assert report.rejects[0].record_id == records[1].record_id
    assert store.get(records[1].record_id) == rival_other
    assert store.count() == 6
    store.close()


def test_concurrent_ingesters_store_each_record_once(store_url, records):
    import threading

    from shoparena.store import open_store

    bulk = [copy for record in records[:4] for copy in copies(record, 150, f"c-{record.problem.problem_id}")]
    halves = (bulk[: len(bulk) * 3 // 4], bulk[len(bulk) // 4 :])
    reports = []

    def run(part):
        with open_store(store_url) as own:
            reports.append(own.ingest(part, batch_size=50))

    threads = [threading.Thread(target=run, args=(part,)) for part in halves]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r.inserted for r in reports) == len(bulk)
    assert sum(r.duplicates for r in reports) == sum(len(p) for p in halves) - len(bulk)
    assert sum(r.rejected for r in reports) == 0
    with open_store(store_url) as store:
        assert store.count() == len(bulk)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _storable(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    items = value.values() if isinstance(value, dict) else value
    return all(_storable(item) for item in items)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=JSON_VALUES, text=st.text(alphabet=st.characters(codec="utf-8"), max_size=20))
def test_any_json_content_is_stored_exactly_or_rejected_alike(store, records, extra, text):
    """Whatever an agent or a tool put in free-form fields (NULs, control characters, any Unicode, huge
    numbers, NaN): the record is stored and comes back exactly, or is rejected with the reason — on
    SQLite and PostgreSQL alike."""
    record_id = uuid.uuid4().hex[:24]
    messages = [*records[0].messages, {"role": "assistant", "content": text, "extra": extra}]
    record = records[0].model_copy(update={"record_id": record_id, "messages": messages})
    report = store.ingest([record])
    if _storable(extra):
        assert (report.inserted, report.rejected) == (1, 0), report.rejects
        assert store.get(record_id) == record
        assert dict(store.canonical(RecordFilter(run=record.run_id)))[record_id] == canonical_bytes(record)
    else:
        assert (report.inserted, report.rejected) == (0, 1)
        assert report.rejects[0].kind == "unstorable"
        assert store.get(record_id) is None
