"""The rank table: the axis-A survivors' ranking fields in a scratch SQLite database, so ranking can
read them grouped by problem (SQLite sorts on disk) however many rows there are. The axis-B rows that
passed every gate have a table of their own: they are not ranked, but their problems go through the
leak guard like the others before export writes them.

Each table's row is a NamedTuple and its columns are that tuple's fields: `RankTable` builds the
`CREATE TABLE`, `INSERT` and `SELECT` from them and batches the inserts, so no other code spells a
column list or reads a row by index. NamedTuples rather than slotted dataclasses because the workers
send their candidate rows to the main process pickled, and a NamedTuple pickles ~2x and unpickles
2.5–6x faster than a slotted dataclass (docs/benchmarks.md), and is a tuple SQLite binds as it is.
"""

from __future__ import annotations

import sqlite3
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar


class CandidateRow(NamedTuple):
    """An axis-A row that reached ranking: what ranking reads, and where the row itself is spilled.
    An axis-B row is one too, with its place in the chunk's axis-B file (no TRL part, no rank key)."""

    seq: int
    """The row's place in the input: unique, and ordered as the input is."""
    problem_id: str
    bucket: str | None
    query: str
    hint: str | None
    """The leak cluster the row carries, if any (`split.ProblemEntry.cluster_hint`)."""
    key: str
    """`rank.rank_key` as JSON."""
    shape: str
    digest: str
    """The first 16 hex digits of the row JSON's sha256: the last tie-break."""
    chunk: int
    """The spill location (`spill.SpillReader.read`): chunk, offset, canonical and TRL byte lengths,
    stored (compressed) length."""
    offset: int
    length: int
    trl_length: int
    stored: int

    def ranked(self, detail: str | None = None) -> RankedRow:
        """What export (or the rejects) needs of the row once ranking has placed it."""
        return RankedRow(
            self.seq,
            self.problem_id,
            self.chunk,
            self.offset,
            self.length,
            self.trl_length,
            self.stored,
            detail,
        )


class RankedRow(NamedTuple):
    """A candidate after ranking: kept, or ranked below its problem's quota with the reject's detail."""

    seq: int
    problem_id: str
    chunk: int
    offset: int
    length: int
    trl_length: int
    stored: int
    detail: str | None


Row = TypeVar("Row", CandidateRow, RankedRow)
BATCH = 5000
_SQL_TYPES = {int: "INTEGER", str: "TEXT", str | None: "TEXT"}


class Table(Generic[Row]):
    """One table whose columns are `row_type`'s fields (the first is the integer primary key)."""

    def __init__(self, db: sqlite3.Connection, name: str, row_type: type[Row], batch: int = BATCH):
        self._db = db
        self.name = name
        self.row_type = row_type
        self.batch = batch
        hints = typing.get_type_hints(row_type)
        columns = [f"{field} {_SQL_TYPES[hints[field]]}" for field in row_type._fields]
        columns[0] += " PRIMARY KEY"
        db.execute(f"CREATE TABLE {name} ({', '.join(columns)})")
        self._insert = f"INSERT INTO {name} VALUES ({','.join('?' * len(columns))})"
        self._select = f"SELECT {', '.join(row_type._fields)} FROM {name}"
        self._batch: list[Row] = []

    def add(self, row: Row) -> None:
        self._batch.append(row)
        if len(self._batch) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self._db.executemany(self._insert, self._batch)
            self._batch.clear()

    def rows(self, order_by: str) -> Iterator[Row]:
        """Every row, flushed first, sorted by `order_by` (columns of this table)."""
        self.flush()
        self._db.commit()
        return map(self.row_type._make, self._db.execute(f"{self._select} ORDER BY {order_by}"))


class RankTable:
    """The build's scratch database: candidates in, kept and dropped rows out; axis-B rows aside."""

    def __init__(self, path: Path, batch: int = BATCH):
        self._db = sqlite3.connect(str(path))
        self._db.execute("PRAGMA journal_mode=OFF")  # scratch: a crash loses the build anyway
        self._db.execute("PRAGMA synchronous=OFF")
        self.candidates = Table(self._db, "cand", CandidateRow, batch)
        self.kept = Table(self._db, "kept", RankedRow, batch)
        self.dropped = Table(self._db, "dropped", RankedRow, batch)
        self.axis_b = Table(self._db, "axis_b", CandidateRow, batch)

    def by_problem(self, table: Table[CandidateRow] | None = None) -> Iterator[list[CandidateRow]]:
        """The candidates (or `table`'s rows) one problem at a time (problems sorted by id), each
        problem's in input order."""
        group: list[CandidateRow] = []
        for row in (table or self.candidates).rows("problem_id, seq"):
            if group and row.problem_id != group[0].problem_id:
                yield group
                group = []
            group.append(row)
        if group:
            yield group

    def close(self) -> None:
        self._db.close()
