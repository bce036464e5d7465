"""What the store did not take, and why: one `Reject` per input line, whole input or record.

The reason codes are stable (the public contract of `--rejects` files and of the per-reason summary);
the human reason beside them says what exactly was wrong, where.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

UNREADABLE = "unreadable"
"""A missing path, a directory without trajectories.jsonl, a file we may not read."""
EMPTY = "empty_input"
"""An input that holds no records at all (asked to ingest it, we ingested nothing)."""
NOT_JSONL = "not_jsonl"
"""A whole file in another format: a JSON array, gzip-compressed data."""
LINE_TOO_LONG = "line_too_long"
NOT_JSON = "not_json"
CUT_SHORT = "cut_short"
"""The last line, without its newline, does not parse: an interrupted write."""
INVALID_RECORD = "invalid_record"
"""JSON, but not a trajectory record (missing fields, wrong types)."""
UNKNOWN_SCHEMA = "unknown_schema"
UNSTORABLE = "unstorable"
"""A record whose values no database column can hold alike on SQLite and PostgreSQL."""
CONFLICT = "conflict"
"""A record id stored already with different content: the store never overwrites."""
REFUSED_BY_DATABASE = "refused_by_database"
"""Anything the database refused that the checks before it did not foresee (kept, never fatal)."""

REASONS = (
    UNREADABLE,
    EMPTY,
    NOT_JSONL,
    LINE_TOO_LONG,
    NOT_JSON,
    CUT_SHORT,
    INVALID_RECORD,
    UNKNOWN_SCHEMA,
    UNSTORABLE,
    CONFLICT,
    REFUSED_BY_DATABASE,
)


class Reject(BaseModel):
    """One input the store did not take, and why."""

    source: str
    """`file:line` for a line of a file; the path for a whole input; `record:ID` otherwise."""
    kind: str
    """The reason code (one of `REASONS`)."""
    reason: str
    file: str | None = None
    line: int | None = None
    """1-based line number in `file` (None for a whole input)."""
    record_id: str | None = None
    conflict: bool = False
    """A record id stored already with different content (an error, not just a bad line)."""
    stored_sha256: str | None = None
    content_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class Where:
    """Where an input came from, so that a reject found later (a conflict) still names its line."""

    source: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def of_line(cls, file: str, line: int) -> Where:
        return cls(f"{file}:{line}", file, line)

    @classmethod
    def of_file(cls, file: str) -> Where:
        return cls(file, file)

    def reject(self, kind: str, reason: str, **details: object) -> Reject:
        return Reject(source=self.source, kind=kind, reason=reason, file=self.file, line=self.line, **details)
