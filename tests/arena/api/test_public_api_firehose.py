"""The trajectory firehose (`GET /v1/trajectories`) over a real arena's store: pages of the canonical
records byte for byte as the store exports them, a cursor stable while records are appended, and bad
cursors refused by name."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.arena.competition.firehose import MAX_LIMIT, START, make_cursor, parse_cursor
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store.feed import MAX_POSITION, FeedPosition
from tests.arena.api.public_fixtures import MemoryCompetition


def copies(records: list[TrajectoryRecord], n: int, tag: str) -> list[TrajectoryRecord]:
    """`n` distinct records made from the real ones (new ids, alternating submissions)."""
    made = []
    for index in range(n):
        base = records[index % len(records)]
        submission = f"{index % 2:032x}"
        agent = base.agent.model_copy(update={"spec": f"arena:{submission}"})
        made.append(
            base.model_copy(
                update={"record_id": TrajectoryRecord.make_id(f"{tag}-{index}", "p", 0), "agent": agent}
            )
        )
    return made


@pytest.fixture
def firehose(arena, server_factory, raw_records):
    arena.store.ingest(copies(raw_records, 7, "first")).raise_for_conflicts()
    return server_factory(arena, competition=MemoryCompetition())


def read_all(server, limit: int, since: str | None = None, **params) -> tuple[list[bytes], str]:
    lines: list[bytes] = []
    while True:
        query = {"limit": limit, **params, **({"since": since} if since else {})}
        response = server.http.get("/v1/trajectories", params=query)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/x-ndjson")
        page = response.content.splitlines()
        assert int(response.headers["X-Records"]) == len(page)
        lines += page
        since = response.headers["X-Next-Cursor"]
        if not page:
            return lines, since


def exported(arena, tmp_path, name: str = "export.jsonl") -> list[bytes]:
    out = tmp_path / name
    arena.store.export(out)
    return out.read_bytes().splitlines()


def test_pages_are_the_stores_export_byte_for_byte(firehose, arena, tmp_path):
    lines, _cursor = read_all(firehose, limit=3)
    assert len(lines) == 7
    assert lines == exported(arena, tmp_path)
    for line in lines:
        TrajectoryRecord.model_validate_json(line, strict=True)


def test_the_cursor_is_stable_while_records_are_appended(firehose, arena, raw_records, tmp_path):
    first = firehose.http.get("/v1/trajectories", params={"limit": 4})
    assert first.headers["X-More"] == "true"
    seen = first.content.splitlines()
    arena.store.ingest(copies(raw_records, 5, "later")).raise_for_conflicts()  # appended mid-read
    rest, cursor = read_all(firehose, limit=4, since=first.headers["X-Next-Cursor"])
    assert seen + rest == exported(arena, tmp_path)
    assert len(seen + rest) == len(set(seen + rest)) == 12
    again = firehose.http.get("/v1/trajectories", params={"since": cursor})
    assert again.status_code == 200 and again.content == b"" and again.headers["X-Next-Cursor"] == cursor
    arena.store.ingest(copies(raw_records, 2, "after-the-head")).raise_for_conflicts()
    tail, _ = read_all(firehose, limit=100, since=cursor)
    assert tail == exported(arena, tmp_path, "later.jsonl")[12:]


def test_invalidated_records_leave_the_firehose(firehose, arena):
    lines, _ = read_all(firehose, limit=100)
    gone = TrajectoryRecord.model_validate_json(lines[2]).record_id
    arena.store.invalidate(gone, reason="judge prompt-injected")
    after, _ = read_all(firehose, limit=100)
    assert len(after) == 6 and all(gone not in line.decode() for line in after)


def test_one_agents_trajectories(firehose):
    lines, _ = read_all(firehose, limit=2, agent=f"arena:{1:032x}")
    assert len(lines) == 3
    assert all(TrajectoryRecord.model_validate_json(line).agent.spec == f"arena:{1:032x}" for line in lines)
    assert read_all(firehose, limit=2, miner="nobody")[0] == []


def test_empty_store_and_start_cursor(arena, server_factory):
    server = server_factory(arena, competition=MemoryCompetition())
    response = server.http.get("/v1/trajectories")
    assert response.status_code == 200 and response.content == b""
    assert response.headers["X-Next-Cursor"] == START and response.headers["X-More"] == "false"


BAD_CURSORS = ["abc", "t1.", "t1.xyz", "t1.-5", "t1." + "f" * 16, " t1.5", "t2.", "t2.10", "t2.1.", "t2..1",
               "t2.x.1", "t2.1.2.3", "t2.1.-2", "t2." + "f" * 16 + ".1", "t2.1." + "8" + "0" * 15, "t3.1.1"]  # fmt: skip


@pytest.mark.parametrize("cursor", BAD_CURSORS)
def test_a_bad_cursor_is_a_400_naming_it(firehose, cursor):
    response = firehose.http.get("/v1/trajectories", params={"since": cursor})
    assert response.status_code == 400
    assert response.json()["error"] == "bad_cursor"
    assert repr(cursor) in response.json()["message"]


def test_limits(firehose):
    assert firehose.http.get("/v1/trajectories", params={"limit": 0}).json()["error"] == "bad_limit"
    capped = firehose.http.get("/v1/trajectories", params={"limit": MAX_LIMIT * 10})
    assert capped.status_code == 200 and capped.headers["X-Records"] == "7"
    assert firehose.http.get("/v1/trajectories", params={"limit": "many"}).status_code == 422


@given(
    st.builds(FeedPosition, commit_order=st.integers(0, MAX_POSITION), row_id=st.integers(0, MAX_POSITION))
)
def test_cursors_round_trip(position):
    assert parse_cursor(make_cursor(position)) == position


def test_a_cursor_from_before_the_feed_order_goes_on_where_it_stood(firehose):
    """`t1.<row id>` cursors were handed out before migration 0002: the rows after that row id come next."""
    everything, _ = read_all(firehose, limit=100)
    legacy, _ = read_all(firehose, limit=2, since="t1.3")
    assert legacy == everything[3:]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_since_is_a_page_or_a_400_never_a_crash(firehose, since):
    response = firehose.http.get("/v1/trajectories", params={"since": since})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert response.json()["error"] == "bad_cursor"
