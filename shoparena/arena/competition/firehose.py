"""The trajectory firehose: the arena's stored trajectory records, page by page, behind an opaque cursor.

A page is the records after a cursor in the store's feed order (`shoparena.store.feed`), each line the
record's canonical bytes exactly as `shoparena store export` writes them (and so as `shoparena corpus
build` reads them), checked against its content hash on the way out. The cursor is the feed position of
the last record served, wrapped so clients treat it as opaque (`t2.<commit order hex>.<row id hex>`):
keyset paging never shifts when records are appended while a client pages (no offsets), an empty page
simply hands the same cursor back, so a follower polls with it until more arrive, and no record can
commit behind a cursor already handed out — on SQLite nor on PostgreSQL (see the feed's module).

A `t1.<row id hex>` cursor (handed out before the feed order existed) is still accepted: it means the
same place among the rows written before, and every row written since comes after it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from shoparena.store import RecordFilter, TrajectoryStore
from shoparena.store.feed import MAX_POSITION, FeedPosition, rows_after

CURSOR_PREFIX = "t2."
CURSOR_PATTERN = re.compile(r"t2\.([0-9a-f]{1,16})\.([0-9a-f]{1,16})")
LEGACY_CURSOR_PATTERN = re.compile(r"t1\.([0-9a-f]{1,15})")
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
"""A record is tens of KB: 500 of them is a page of ~10–20 MB, built in memory per request."""
START = CURSOR_PREFIX + "0.0"


class BadCursor(ValueError):
    """A `since` that is not a cursor this API handed out."""


def make_cursor(position: FeedPosition) -> str:
    return f"{CURSOR_PREFIX}{position.commit_order:x}.{position.row_id:x}"


def parse_cursor(cursor: str | None) -> FeedPosition:
    """The feed position behind `cursor`; None or "" is the start of the store."""
    if cursor is None or cursor == "":
        return FeedPosition()
    match = CURSOR_PATTERN.fullmatch(cursor)
    if match is not None:
        order, row_id = int(match.group(1), 16), int(match.group(2), 16)
        if order <= MAX_POSITION and row_id <= MAX_POSITION:
            return FeedPosition(commit_order=order, row_id=row_id)
    legacy = LEGACY_CURSOR_PATTERN.fullmatch(cursor)
    if legacy is not None:
        return FeedPosition(commit_order=0, row_id=int(legacy.group(1), 16))
    shown = cursor if len(cursor) <= 80 else cursor[:79] + "…"
    raise BadCursor(
        f"since={shown!r} is not a firehose cursor: pass the X-Next-Cursor of an earlier page "
        f"(or nothing, to start at the beginning)"
    )


class Page(BaseModel):
    """One page: the JSONL body, how many records it holds, and the cursor to continue from."""

    body: bytes
    records: int
    next_cursor: str
    more: bool
    """True when the page was full: more records may follow at once."""


def read_page(store: TrajectoryStore, since: str | None, limit: int, where: RecordFilter) -> Page:
    """The up to `limit` records after cursor `since` that `where` selects (invalidated ones never)."""
    position = parse_cursor(since)
    rows = rows_after(store, position, limit, where)
    if rows:
        position = rows[-1].position
    return Page(
        body=b"".join(row.line + b"\n" for row in rows),
        records=len(rows),
        next_cursor=make_cursor(position),
        more=len(rows) == limit,
    )
