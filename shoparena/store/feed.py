"""Following the store: the rows after a position, in an order no later commit can land behind.

A follower (the arena's firehose, a corpus builder polling for new trajectories) keeps the position of
the last row it read and asks for the rows after it. Paging on the row id alone is only safe on SQLite,
whose row ids are handed out under the single write lock, in commit order. On PostgreSQL a row id comes
from a sequence when the row is inserted; if transaction A takes id 10, B takes id 11 and commits first,
a reader at that moment sees 11 and moves past 10, which then commits behind it and is never read.

So a position is (commit_order, row id): `commit_order` is the writing transaction's id on PostgreSQL
(the column's default, migration 0002) and 0 on SQLite. A page holds only rows whose transaction id is
below the reader's snapshot xmin — every transaction below it has committed or aborted — so any row that
commits later has a transaction id at or above that xmin, greater than every position already handed
out, and sorts after them. The price: a row is held back while an older write transaction is still
open anywhere in the database cluster (the arena's writes are short; a session left "idle in
transaction" delays the head, it never loses a row).
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import and_, literal_column, select, tuple_

from shoparena.store.export import stored_text_column, verified_record_bytes
from shoparena.store.query import EVALUATIONS, RecordFilter
from shoparena.store.store import TrajectoryStore

MAX_POSITION = 2**63 - 1
"""Both parts are 64-bit signed columns."""
PG_SNAPSHOT_XMIN = literal_column("pg_snapshot_xmin(pg_current_snapshot())::text::bigint")


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
    if store.dialect == "postgresql":
        conditions.append(c.commit_order < PG_SNAPSHOT_XMIN)
    query = (
        select(c.commit_order, c.id, c.record_id, c.content_sha256, stored_text_column())
        .where(and_(*conditions, *(where or RecordFilter()).conditions()))
        .order_by(c.commit_order, c.id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return [
        FeedRow(
            position=FeedPosition(commit_order=order, row_id=row_id),
            record_id=record_id,
            line=verified_record_bytes(record_id, sha256, text),
        )
        for order, row_id, record_id, sha256, text in rows
    ]
