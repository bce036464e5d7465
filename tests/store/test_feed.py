"""Following the store (`shoparena.store.feed`): pages in an order no later commit can land behind.

On PostgreSQL the tests hold real transactions open on separate connections — a row id taken by a
transaction that commits after a younger one — and check that a follower still reads every committed
row exactly once; hypothesis drives random interleavings of writers, rollbacks and reads."""

from __future__ import annotations

import itertools
import time

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoparena.store import RecordFilter
from shoparena.store.feed import FeedPosition, FeedRow, rows_after
from shoparena.store.store import TrajectoryStore
from tests.store.conftest import PG_ADMIN_URL, copies

HEAD_WAIT_S = 20.0
"""Another test's open write transaction on the same server holds rows back for its duration."""


def read_to_head(
    store: TrajectoryStore, after: FeedPosition, limit: int = 2
) -> tuple[list[FeedRow], FeedPosition]:
    rows: list[FeedRow] = []
    while page := rows_after(store, after, limit):
        rows += page
        after = page[-1].position
    return rows, after


def read_until(store, after: FeedPosition, want: int) -> tuple[list[FeedRow], FeedPosition]:
    """Rows after `after` until `want` have come (committed rows are only ever delayed, never lost)."""
    rows: list[FeedRow] = []
    deadline = time.monotonic() + HEAD_WAIT_S
    while len(rows) < want and time.monotonic() < deadline:
        page, after = read_to_head(store, after)
        rows += page
        if len(rows) < want:
            time.sleep(0.05)
    return rows, after


def test_pages_follow_ingest_order_filters_and_invalidations(store, records):
    batch = copies(records[0], 7, "feed") + copies(records[1], 3, "other")
    store.ingest(batch).raise_for_conflicts()
    store.invalidate(batch[2].record_id, "bad judge")
    rows, head = read_to_head(store, FeedPosition(), limit=3)
    assert [row.record_id for row in rows] == [
        r.record_id for r in batch if r.record_id != batch[2].record_id
    ]
    assert [row.position for row in rows] == sorted(
        (row.position for row in rows), key=lambda p: (p.commit_order, p.row_id)
    )
    assert rows_after(store, head, 3) == []
    only = rows_after(store, FeedPosition(), 100, RecordFilter(run="other-0"))
    assert [row.record_id for row in only] == [r.record_id for r in batch[7:]]
    exported = dict(store.canonical())
    assert all(row.line == exported[row.record_id] for row in rows)


@pytest.fixture
def pg_store(pg_store_url):
    from shoparena.store import open_store

    with open_store(pg_store_url) as opened:
        yield opened


def test_a_row_committed_behind_a_younger_one_is_still_read(pg_store, records):
    """A takes the smaller row id and commits last: the follower must not have moved past it."""
    first, second = copies(records[0], 2, "late")
    older = pg_store.engine.connect()
    younger = pg_store.engine.connect()
    try:
        older.begin()
        pg_store.add_within(older, [first])
        with younger.begin():
            pg_store.add_within(younger, [second])
        early = rows_after(pg_store, FeedPosition(), 10)
        assert early == []  # the younger row waits for the older transaction: it could commit behind it
        older.commit()
    finally:
        older.close()
        younger.close()
    rows, _ = read_until(pg_store, FeedPosition(), 2)
    assert [row.record_id for row in rows] == [first.record_id, second.record_id]


def test_a_transaction_id_older_than_its_row_id_sorts_by_commit_order(pg_store, records):
    """B gets its transaction id first and its row id last, and commits first; A commits after a
    follower has read B. Paging by row id would step over A; the feed orders by transaction id."""
    a_record, b_record = copies(records[1], 2, "swap")
    a = pg_store.engine.connect()
    b = pg_store.engine.connect()
    try:
        b.begin()
        b.exec_driver_sql("SELECT pg_current_xact_id()")  # B's transaction id is taken now
        a.begin()
        pg_store.add_within(a, [a_record])  # A: younger transaction id, smaller row id
        pg_store.add_within(b, [b_record])
        b.commit()
        seen, after = read_to_head(pg_store, FeedPosition())
        assert a_record.record_id not in {row.record_id for row in seen}
        a.commit()
    finally:
        a.close()
        b.close()
    rest, _ = read_until(pg_store, after, 2 - len(seen))
    rows = {row.record_id: row.position for row in seen + rest}
    assert sorted(rows) == sorted([a_record.record_id, b_record.record_id])
    assert len(seen + rest) == 2
    a_at, b_at = rows[a_record.record_id], rows[b_record.record_id]
    assert a_at.row_id < b_at.row_id and a_at.commit_order > b_at.commit_order


def test_a_write_transaction_on_another_database_holds_nothing_back(pg_store, records):
    """A shared server: another application's long transaction must not stall the store's feed."""
    elsewhere = psycopg.connect(PG_ADMIN_URL)
    try:
        elsewhere.execute("SELECT pg_current_xact_id()")  # an open write transaction, on another database
        batch = copies(records[0], 3, "shared")
        pg_store.ingest(batch).raise_for_conflicts()
        rows, _ = read_to_head(pg_store, FeedPosition())
        assert [row.record_id for row in rows] == [r.record_id for r in batch]
    finally:
        elsewhere.rollback()
        elsewhere.close()


WRITERS = 3
step = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, WRITERS - 1)),
    st.tuples(st.just("commit"), st.integers(0, WRITERS - 1)),
    st.tuples(st.just("rollback"), st.integers(0, WRITERS - 1)),
    st.tuples(st.just("read"), st.just(0)),
)
_examples = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=14))
def test_any_interleaving_of_writers_loses_and_repeats_nothing(pg_store, records, schedule):
    example = next(_examples)
    _, start = read_to_head(pg_store, FeedPosition())
    fresh = iter(copies(records[0], 3 * len(schedule), f"mix{example}"))
    connections = [pg_store.engine.connect() for _ in range(WRITERS)]
    pending: list[list[str]] = [[] for _ in range(WRITERS)]
    committed: list[str] = []
    read: list[FeedRow] = []
    after = start
    try:
        for action, writer in schedule:
            connection = connections[writer]
            if action == "insert":
                if not connection.in_transaction():
                    connection.begin()
                record = next(fresh)
                pg_store.add_within(connection, [record])
                pending[writer].append(record.record_id)
            elif action in ("commit", "rollback") and connection.in_transaction():
                (connection.commit if action == "commit" else connection.rollback)()
                if action == "commit":
                    committed += pending[writer]
                pending[writer] = []
            elif action == "read":
                page, after = read_to_head(pg_store, after)
                read += page
        for writer, connection in enumerate(connections):
            if connection.in_transaction():
                connection.commit()
                committed += pending[writer]
    finally:
        for connection in connections:
            connection.close()
    rest, _ = read_until(pg_store, after, len(committed) - len(read))
    ids = [row.record_id for row in read + rest]
    assert len(ids) == len(set(ids)), "a row was served twice"
    assert sorted(ids) == sorted(committed), "a committed row was never served (or a rolled-back one was)"
