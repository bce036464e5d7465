"""The trajectory firehose: the arena's stored trajectory records, page by page, behind an opaque cursor.

A page is the records after a cursor in the store's ingest order, each line the record's canonical
bytes exactly as `shoparena store export` writes them (and so as `shoparena corpus build` reads them),
checked against its content hash on the way out. The cursor is the store's row id of the last record
served, wrapped so clients treat it as opaque (`t1.<hex>`): keyset paging on the row id never shifts
when records are appended while a client pages (no offsets), and an empty page simply hands the same
cursor back, so a follower polls with it until more arrive.

On SQLite (the default) row ids are handed out under the single write lock, in commit order, so a
cursor never passes a record that commits later. On PostgreSQL a sequence value is taken before its
transaction commits, so a record of a transaction still open could commit behind a cursor already
handed out; the arena's writes are short transactions, and a follower that must never miss one
re-reads its last page (records are idempotent by `record_id`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel
from sqlalchemy import and_, select

from shoparena.store import RecordFilter, TrajectoryStore
from shoparena.store.export import stored_text_column, verified_record_bytes
from shoparena.store.query import EVALUATIONS

CURSOR_PREFIX = "t1."
CURSOR_PATTERN = re.compile(r"t1\.([0-9a-f]{1,15})")
"""At most 15 hex digits: every row id a 64-bit signed column can hold below 2**60."""
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
"""A record is tens of KB: 500 of them is a page of ~10–20 MB, built in memory per request."""
START = CURSOR_PREFIX + "0"


class BadCursor(ValueError):
    """A `since` that is not a cursor this API handed out."""


def make_cursor(row_id: int) -> str:
    return f"{CURSOR_PREFIX}{row_id:x}"


def parse_cursor(cursor: str | None) -> int:
    """The row id behind `cursor`; None or "" is the start of the store."""
    if cursor is None or cursor == "":
        return 0
    match = CURSOR_PATTERN.fullmatch(cursor)
    if match is None:
        shown = cursor if len(cursor) <= 80 else cursor[:79] + "…"
        raise BadCursor(
            f"since={shown!r} is not a firehose cursor: pass the X-Next-Cursor of an earlier page "
            f"(or nothing, to start at the beginning)"
        )
    return int(match.group(1), 16)


class Page(BaseModel):
    """One page: the JSONL body, how many records it holds, and the cursor to continue from."""

    body: bytes
    records: int
    next_cursor: str
    more: bool
    """True when the page was full: more records may follow at once."""


def read_page(store: TrajectoryStore, since: str | None, limit: int, where: RecordFilter) -> Page:
    """The up to `limit` records after cursor `since` that `where` selects (invalidated ones never)."""
    last = parse_cursor(since)
    c = EVALUATIONS.c
    query = (
        select(c.id, c.record_id, c.content_sha256, stored_text_column())
        .where(and_(c.id > last, *where.conditions()))
        .order_by(c.id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    lines = [verified_record_bytes(record_id, sha256, text) + b"\n" for _id, record_id, sha256, text in rows]
    if rows:
        last = rows[-1][0]
    return Page(
        body=b"".join(lines), records=len(rows), next_cursor=make_cursor(last), more=len(rows) == limit
    )
