"""Following the store: the rows after a position, in an order no later commit can land behind.

A follower (the arena's firehose, a corpus builder polling for new trajectories) keeps the position of
the last row it read and asks for the rows after it. Paging on the row id alone is only safe on SQLite,
whose row ids are handed out under the single write lock, in commit order. On PostgreSQL a row id comes
from a sequence when the row is inserted; if transaction A takes id 10, B takes id 11 and commits first,
a reader at that moment sees 11 and moves past 10, which then commits behind it and is never read.

So a position is (commit_order, row id): `commit_order` is the writing transaction's id on PostgreSQL
(the column's default, migration 0002) and 0 on SQLite. A page holds only rows whose transaction id is
below the horizon: the oldest write transaction still open in this database, or the snapshot's xmax
when none is. Every transaction below it has committed or aborted, so any row that commits later has a
transaction id at or above the horizon, greater than every position already handed out, and sorts after
them. The price: a row is held back while an older write transaction on the store's database is open (the
arena's writes are short; a session left "idle in transaction" delays the head, it never loses a row).

The horizon is scoped to the database on purpose. The snapshot's xmin would be simpler, but it counts
every write transaction of the cluster, so on a shared server any other application's long transaction
(a migration, a batch job, another tenant's store) would stall the feed. Transactions of other databases
cannot write this one's tables, so they are left out: the horizon is read in its own statement — the
snapshot's in-progress ids that belong to a backend (or a prepared transaction) of this database — and
the page is read in a later snapshot, where each transaction that had ended by then is visible.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import and_, select, text, tuple_

from shoparena.store.export import stored_text_column, verified_record_bytes
from shoparena.store.query import EVALUATIONS, RecordFilter
from shoparena.store.store import TrajectoryStore

MAX_POSITION = 2**63 - 1
"""Both parts are 64-bit signed columns."""
PG_FEED_HORIZON = text(
    """
    SELECT least(
        pg_snapshot_xmax(snapshot)::text::bigint,
        (SELECT min(xid::text::bigint) FROM pg_snapshot_xip(snapshot) AS xid
          WHERE xid::text::bigint & 4294967295 IN (
              SELECT backend_xid::text::bigint FROM pg_stat_activity
               WHERE datname = current_database() AND backend_xid IS NOT NULL
              UNION ALL
              SELECT transaction::text::bigint FROM pg_prepared_xacts
               WHERE database = current_database())))
      FROM pg_current_snapshot() AS snapshot
    """
)
"""The first transaction id a page may not reach (see the module's docstring).

`pg_snapshot_xip` gives full 64-bit ids, the backends and prepared transactions only their low 32 bits:
an id in progress is matched on those. The backends are read before the prepared transactions, so one
that prepares in between is seen in the second list."""


class FeedPosition(BaseModel):
    """Where a follower stands: after the row (`commit_order`, `row_id`); the start is (0, 0)."""

    commit_order: int = Field(0, ge=0, le=MAX_POSITION)
    row_id: int = Field(0, ge=0, le=MAX_POSITION)


class FeedRow(BaseModel):
    """One row of a page: its position and the record's canonical bytes (checked against its hash)."""

    position: FeedPosition
    record_id: str
    line: bytes


def rows_after(
    store: TrajectoryStore, after: FeedPosition, limit: int, where: RecordFilter | None = None
) -> list[FeedRow]:
    """Up to `limit` rows after `after` that `where` selects (invalidated ones never), in feed order."""
    c = EVALUATIONS.c
    conditions = [tuple_(c.commit_order, c.id) > tuple_(after.commit_order, after.row_id)]
    # Autocommit: each statement is a transaction of its own, so the page is read in a snapshot taken
    # after the horizon (it sees every transaction that had ended by then), with no BEGIN/COMMIT trips.
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        if store.dialect == "postgresql":
            conditions.append(c.commit_order < connection.execute(PG_FEED_HORIZON).scalar_one())
        query = (
            select(c.commit_order, c.id, c.record_id, c.content_sha256, stored_text_column())
            .where(and_(*conditions, *(where or RecordFilter()).conditions()))
            .order_by(c.commit_order, c.id)
            .limit(limit)
        )
        rows = connection.execute(query).all()
    return [
        FeedRow(
            position=FeedPosition(commit_order=order, row_id=row_id),
            record_id=record_id,
            line=verified_record_bytes(record_id, sha256, text),
        )
        for order, row_id, record_id, sha256, text in rows
    ]
