"""Filters (against a Python oracle, property-tested), invalidation, stats, JSONL and Parquet export."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store import RecordFilter, StoreError, StoreIntegrityError, UnknownRecordError
from shoparena.store.export import verified_record_bytes
from shoparena.store.records import canonical_bytes
from tests.store.conftest import AGENTS, EPOCH


def matches(record: TrajectoryRecord, where: RecordFilter, invalidated: set[str]) -> bool:
    """The oracle: what each filter means, written against the record model."""
    started = datetime.fromisoformat(record.timings.started_at)
    rule = record.score.rule
    quality = record.judge.quality if record.judge else None
    checks = [
        where.agent is None or where.agent in (record.agent.agent_id, record.agent.spec),
        where.miner is None or where.miner == record.agent.miner_hotkey,
        where.problem is None or where.problem == record.problem.problem_id,
        where.suite is None or where.suite == record.problem.suite,
        where.bucket is None or where.bucket == record.problem.bucket,
        where.run is None or where.run == record.run_id,
        where.success is None or where.success == record.score.success,
        where.since is None or started >= where.since,
        where.until is None or started < where.until,
        where.min_rule is None or (rule is not None and rule >= where.min_rule),
        where.max_rule is None or (rule is not None and rule <= where.max_rule),
        where.min_quality is None or (quality is not None and quality >= where.min_quality),
        where.include_invalidated or record.record_id not in invalidated,
    ]
    return all(checks)


@pytest.fixture
def filled(store, records):
    store.ingest(records)
    invalidated = {records[1].record_id, records[14].record_id}
    for record_id in sorted(invalidated):
        store.invalidate(record_id, "test: replayed against a stale catalogue", by="operator")
    return store, invalidated


def filters(records):
    def pick(values):
        return st.none() | st.sampled_from(sorted(set(values), key=str))

    times = [EPOCH + timedelta(hours=h) for h in (-1, 0, 5, 11, 23, 30)]
    return st.builds(
        RecordFilter,
        agent=pick([a.agent_id for a in AGENTS] + [a.spec for a in AGENTS] + ["nobody"]),
        miner=pick([AGENTS[1].miner_hotkey, "5Fother"]),
        problem=pick([r.problem.problem_id for r in records]),
        suite=pick(["qualifying", "race"]),
        bucket=pick(["product", "shop", "voucher", "web"]),
        run=pick(sorted({r.run_id for r in records})),
        since=pick(times),
        until=pick(times),
        min_rule=st.none() | st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
        max_rule=st.none() | st.sampled_from([0.0, 0.5, 1.0]),
        success=st.none() | st.booleans(),
        min_quality=st.none() | st.sampled_from([0.1, 0.5, 0.9]),
        include_invalidated=st.booleans(),
    )


def test_filters_select_exactly_what_the_oracle_selects(filled, records):
    store, invalidated = filled
    assert len({r.score.success for r in records}) == 2, "the fixture should hold successes and failures"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(where=filters(records))
    def check(where):
        expected = [r.record_id for r in records if matches(r, where, invalidated)]
        assert store.record_ids(where) == expected
        assert store.count(where) == len(expected)

    check()


def test_each_filter_narrows(filled, records):
    store, invalidated = filled
    live = len(records) - len(invalidated)
    assert store.count() == live
    assert store.count(RecordFilter(include_invalidated=True)) == len(records)
    assert store.count(RecordFilter(agent="reference:pipeline")) == 11
    assert store.count(RecordFilter(agent="miner-abc@3")) == 11
    assert store.count(RecordFilter(miner=AGENTS[1].miner_hotkey)) == 11
    assert store.count(RecordFilter(suite="qualifying")) == 11
    assert store.count(RecordFilter(problem=records[0].problem.problem_id)) == 2
    assert store.count(RecordFilter(bucket="shop", include_invalidated=True)) == 8
    # episodes start every hour from EPOCH (agent 0 on even hours, agent 1 on odd ones); hours 2, 5 invalidated
    assert store.count(RecordFilter(since=EPOCH, until=EPOCH + timedelta(hours=4))) == 3
    east = timezone(timedelta(hours=9))
    assert store.count(RecordFilter(since=(EPOCH + timedelta(hours=20)).astimezone(east))) == 4
    assert store.count(RecordFilter(since="2025-03-02T08:00:00Z")) == 4
    assert store.count(RecordFilter(since="2025-03-02T08:00:00")) == 4
    assert store.count(RecordFilter(since="2025-03-02T17:00:00+09:00")) == 4
    assert store.count(RecordFilter(until=EPOCH)) == 0


def test_invalidation_hides_a_row_without_changing_it(store, records):
    target = records[6]
    store.ingest(records[5:8])
    before = dict(store.canonical(RecordFilter(include_invalidated=True)))
    info = store.invalidate(target.record_id, "  the miner's agent read the reward file  ", by="5Fvalidator")
    assert info.reason == "the miner's agent read the reward file"
    assert info.created_at.tzinfo is not None
    assert target.record_id not in store.record_ids()
    after = dict(store.canonical(RecordFilter(include_invalidated=True)))
    assert after == before
    assert store.get(target.record_id) == target
    store.invalidate(target.record_id, "confirmed on review")
    assert [i.reason for i in store.invalidations(target.record_id)] == [
        "the miner's agent read the reward file",
        "confirmed on review",
    ]
    assert store.count() == 2
    with pytest.raises(UnknownRecordError, match="not in the store"):
        store.invalidate("no-such-record", "x")
    with pytest.raises(StoreError, match="needs a reason"):
        store.invalidate(target.record_id, "   ")


def test_jsonl_export_returns_the_records_exactly(filled, records, tmp_path):
    store, invalidated = filled
    out = tmp_path / "all.jsonl"
    assert store.export(out, RecordFilter(include_invalidated=True)) == len(records)
    assert out.read_bytes() == b"".join(canonical_bytes(r) + b"\n" for r in records)
    live = tmp_path / "live.jsonl"
    assert store.export(live) == len(records) - len(invalidated)
    lines = live.read_bytes().splitlines()
    assert [TrajectoryRecord.model_validate_json(line) for line in lines] == [
        r for r in records if r.record_id not in invalidated
    ]
    assert not list(tmp_path.glob("*.partial"))


def test_export_pages_through_results_with_bounded_reads(store, records, tmp_path):
    from shoparena.store.export import export_jsonl

    store.ingest(records)
    out = tmp_path / "paged.jsonl"
    progress = []
    written = export_jsonl(store.engine, RecordFilter(success=False), out, progress.append, page=5)
    expected = [r for r in records if r.score.success is False]
    assert written == len(expected) == sum(progress)
    assert out.read_bytes() == b"".join(canonical_bytes(r) + b"\n" for r in expected)


def test_parquet_export_is_readable_with_pyarrow(filled, records, tmp_path):
    store, invalidated = filled
    out = tmp_path / "miner.parquet"
    where = RecordFilter(miner=AGENTS[1].miner_hotkey, include_invalidated=True)
    assert store.export(out, where, fmt="parquet") == 12
    table = pq.read_table(out)
    assert table.num_rows == 12
    assert {
        "record_id",
        "agent_id",
        "miner_hotkey",
        "rule_score",
        "success",
        "created_at",
        "invalidated",
    } <= set(table.column_names)
    rows = table.to_pylist()
    expected = [r for r in records if r.agent.miner_hotkey]
    assert [row["record_id"] for row in rows] == [r.record_id for r in expected]
    for row, record in zip(rows, expected, strict=True):
        assert row["record"].encode() == canonical_bytes(record)
        assert row["rule_score"] == pytest.approx(record.score.rule)
        assert row["success"] is record.score.success
        assert row["judge_quality"] == (record.judge.quality if record.judge else None)
        assert row["created_at"] == datetime.fromisoformat(record.timings.started_at)
        assert row["invalidated"] is (record.record_id in invalidated)
        assert row["suite_version"] == "2025.03"
    plain = tmp_path / "live.parquet"
    store.export(plain, RecordFilter(), fmt="parquet")
    assert "invalidated" not in pq.read_table(plain).column_names
    assert pq.read_table(plain).num_rows == len(records) - len(invalidated)
    empty = tmp_path / "empty.parquet"
    assert store.export(empty, RecordFilter(agent="nobody"), fmt="parquet") == 0
    assert pq.read_table(empty).num_rows == 0


def test_stats(filled, records):
    store, invalidated = filled
    stats = store.stats()
    assert stats.revision == "0002_commit_order"
    assert (stats.evaluations, stats.invalidated, stats.runs, stats.problems) == (22, 2, 2, 12)
    assert stats.first_episode == EPOCH
    assert stats.last_episode == EPOCH + timedelta(hours=23)
    assert stats.first_episode.tzinfo is not None
    by_agent = {g.key: g for g in stats.by_agent}
    live = [r for r in records if r.record_id not in invalidated]
    for agent in AGENTS:
        mine = [r for r in live if r.agent.agent_id == agent.agent_id]
        assert by_agent[agent.agent_id].evaluations == len(mine)
        assert by_agent[agent.agent_id].successes == sum(r.score.success for r in mine)
        assert by_agent[agent.agent_id].mean_rule == pytest.approx(
            sum(r.score.rule for r in mine) / len(mine)
        )
    assert sum(g.evaluations for g in stats.by_bucket) == 22
    assert {g.key for g in stats.by_suite} == {None, "qualifying"}


def test_a_stored_text_that_no_longer_matches_its_hash_is_refused():
    data = b'{"record_id":"r"}'
    assert verified_record_bytes("r", hashlib.sha256(data).hexdigest(), data.decode()) == data
    with pytest.raises(StoreIntegrityError, match="no longer matches"):
        verified_record_bytes("r", hashlib.sha256(data).hexdigest(), '{"record_id":"R"}')


def test_unknown_export_format(store, tmp_path):
    with pytest.raises(StoreError, match="unknown export format"):
        store.export(tmp_path / "x", fmt="csv")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="does not exist"):
        store.export(tmp_path / "no" / "x.jsonl")
