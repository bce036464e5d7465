"""Reading the store's inputs: run directories and JSONL files of trajectory records, line by line.

Whatever a careless user or an attacker hands us becomes records or located rejects, never a crash or a
silent skip: a missing path, a directory without records, a file we may not read, an empty file, a JSON
array or a gzip or UTF-16 file instead of JSONL (one reject for the whole file, saying what it is), a
line longer than `MAX_LINE_BYTES` (skipped without holding it in memory), binary garbage, an
interrupted last write, and records of the wrong shape or types. Lines are parsed strictly: a record
whose `sample` is `"3"` or `true` is not silently turned into 3 or 1. A UTF-8 byte-order mark at the
start of a file is not part of line 1.
"""

from __future__ import annotations

import os
from codecs import BOM_UTF8
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from shoparena.records.trajectory import TrajectoryRecord, invalid_record_reason
from shoparena.store.rejects import (
    CUT_SHORT,
    EMPTY,
    INVALID_RECORD,
    LINE_TOO_LONG,
    NOT_JSON,
    NOT_JSONL,
    UNREADABLE,
    Reject,
    Where,
)

TRAJECTORIES_FILE = "trajectories.jsonl"
"""The runner's record file inside a run directory (shoparena.eval.runner writes it)."""
MAX_LINE_BYTES = 64 * 2**20
"""A real record is tens of KB; a line beyond this is skipped as a reject, never read into memory."""
CHUNK = 2**20
FOREIGN_FORMATS = (
    (b"\x1f\x8b", "gzip-compressed data, not JSONL: decompress it first (gunzip)"),
    (b"\xff\xfe", "UTF-16 text, not UTF-8 JSONL: convert it (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text, not UTF-8 JSONL: convert it (iconv -f UTF-16 -t UTF-8)"),
)
JSON_ARRAY = (
    "a JSON array, not JSONL (one record per line); nothing was read from it: "
    "convert it with `jq -c '.[]' FILE > FILE.jsonl`"
)

Entry = tuple[Where, TrajectoryRecord | Reject]


def record_files(paths: Sequence[str | os.PathLike]) -> Iterator[tuple[Path, Reject | None]]:
    """Each input as the JSONL file to read (a run directory means its trajectories.jsonl), or why not."""
    for given in paths:
        path = Path(given)
        where = Where.of_file(str(path))
        if path.is_dir():
            inner = path / TRAJECTORIES_FILE
            if inner.is_file():
                yield inner, None
            else:
                yield path, where.reject(UNREADABLE, f"a directory without {TRAJECTORIES_FILE}")
        elif path.is_file():
            yield path, None
        elif path.exists():
            yield path, where.reject(UNREADABLE, "not a regular file (a device, pipe or socket)")
        else:
            yield path, where.reject(UNREADABLE, "no such file or directory")


def _foreign_format(head: bytes) -> str | None:
    """What a file whose first line starts with `head` is, when it is plainly not JSONL."""
    for magic, reason in FOREIGN_FORMATS:
        if head.startswith(magic):
            return reason
    if head.removeprefix(BOM_UTF8).lstrip()[:1] == b"[":
        return JSON_ARRAY
    return None


def _lines(handle: BinaryIO, limit: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, complete) for every line; a line longer than `limit` comes back as its first
    bytes with complete=False, the rest read past in chunks and dropped."""
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) <= limit or line.endswith(b"\n"):
            yield number, line, True
            continue
        head = line[:CHUNK]
        del line
        while True:
            rest = handle.readline(CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        yield number, head, False


def count_lines(paths: Sequence[str | os.PathLike], max_line_bytes: int = MAX_LINE_BYTES) -> int:
    """How many entries `read_records` will yield (a progress bar total; reading is far cheaper than
    ingesting): non-empty lines, or one for an input rejected whole."""
    total = 0
    for path, problem in record_files(paths):
        if problem is not None:
            total += 1
            continue
        try:
            with path.open("rb") as handle:
                lines = 0
                for number, line, _complete in _lines(handle, max_line_bytes):
                    if number == 1 and _foreign_format(line):
                        break
                    lines += bool(line.strip())
        except OSError:
            lines = 0
        total += max(lines, 1)
    return total


def _why_not(exc: ValidationError, line: bytes) -> tuple[str, str]:
    """(reason code, one-line reason naming the failing fields); pydantic's own message spans lines."""
    errors = exc.errors(include_url=False)
    if any(error["type"] == "json_invalid" for error in errors):
        return NOT_JSON, f"not JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}"
    if len(errors) == 1 and not errors[0].get("loc"):
        shape = "a JSON array" if line.lstrip()[:1] == b"[" else "JSON"
        return INVALID_RECORD, f"{shape}, not a trajectory record object (JSONL holds one record per line)"
    return INVALID_RECORD, invalid_record_reason(exc)


def _parse(where: Where, line: bytes) -> TrajectoryRecord | Reject:
    if b"\x00" in line:
        return where.reject(NOT_JSON, "binary data (NUL bytes), not a line of JSON")
    try:
        return TrajectoryRecord.model_validate_json(line, strict=True)
    except ValidationError as exc:
        kind, reason = _why_not(exc, line)
        if kind == NOT_JSON and not line.endswith(b"\n"):
            kind, reason = CUT_SHORT, f"last line cut short (an interrupted write?): {reason}"
        return where.reject(kind, reason)


def _read_file(handle: BinaryIO, name: str, limit: int) -> Iterator[Entry]:
    found = False
    for number, line, complete in _lines(handle, limit):
        if number == 1:
            foreign = _foreign_format(line)
            if foreign is not None:
                yield Where.of_file(name), Where.of_file(name).reject(NOT_JSONL, foreign)
                return
            line = line.removeprefix(BOM_UTF8)
        if not line.strip():
            continue
        found = True
        where = Where.of_line(name, number)
        if not complete:
            reason = f"line is longer than {limit:,} bytes (the most a record may take); skipped unread"
            yield where, where.reject(LINE_TOO_LONG, reason)
        else:
            yield where, _parse(where, line)
    if not found:
        yield Where.of_file(name), Where.of_file(name).reject(EMPTY, "holds no records (an empty file)")


def read_records(paths: Sequence[str | os.PathLike], max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Entry]:
    """(where, record or reject) for every non-empty line, and one reject per input rejected whole;
    streaming, in input order."""
    for path, problem in record_files(paths):
        if problem is not None:
            yield Where.of_file(problem.source), problem
            continue
        try:
            handle = path.open("rb")
        except OSError as exc:
            where = Where.of_file(str(path))
            yield where, where.reject(UNREADABLE, f"cannot be read: {exc.strerror or exc}")
            continue
        with handle:
            try:
                yield from _read_file(handle, str(path), max_line_bytes)
            except OSError as exc:  # lines before it were yielded: they are kept
                where = Where.of_file(str(path))
                yield where, where.reject(UNREADABLE, f"reading stopped part-way: {exc.strerror or exc}")
