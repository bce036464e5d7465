"""Input discovery: run directories, JSONL files (one record per line) and JSON files (a list of records,
one record, or one arena step log), read as a stream of (source label, record bytes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson

TRAJECTORIES_FILE = "trajectories.jsonl"


class SourceError(ValueError):
    pass


def resolve_inputs(inputs: list[Path | str]) -> list[Path]:
    files = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            run_file = path / TRAJECTORIES_FILE
            if not run_file.exists():
                raise SourceError(f"{path} is a directory without {TRAJECTORIES_FILE} (not a run directory)")
            files.append(run_file)
        elif path.is_file():
            files.append(path)
        else:
            raise SourceError(f"input {path} does not exist")
    return files


def _is_step(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("completion"), dict)


def iter_records(path: Path) -> Iterator[tuple[str, bytes]]:
    """(label, raw record bytes); a JSON file is decoded whole (a list of records must fit in memory),
    a JSONL file streams line by line. Undecodable lines are passed on as they are, so they are
    rejected with a reason rather than stopping the run."""
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    is_jsonl = path.suffix == ".jsonl" or not head.startswith(b"[")
    if path.suffix == ".json" and head.startswith(b"{"):
        try:
            value = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            yield f"{path.name}[0]", orjson.dumps(value)
            return
    if is_jsonl:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield f"{path.name}:{number}", line.rstrip(b"\r\n")
        return
    try:
        value = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        yield f"{path.name}", path.read_bytes()[:2000]
        del exc
        return
    if isinstance(value, list) and value and all(_is_step(v) for v in value):
        yield f"{path.name}[0]", orjson.dumps(value)
        return
    for index, item in enumerate(value if isinstance(value, list) else [value]):
        yield f"{path.name}[{index}]", orjson.dumps(item)


def line_ranges(path: Path, lines: int, block: int = 1 << 22) -> Iterator[tuple[int, int, int]]:
    """(start offset, end offset, number of the first line) of consecutive runs of `lines` lines of a
    JSONL file. The parallel build hands workers these instead of the lines themselves, so the main
    process neither splits nor pickles the input; `read_line_range` turns one back into records. Read
    in blocks, not through a memory map: a map of the whole input would count the pages it touched in
    the process's resident memory until the end of the build."""
    start = 0
    number = 1
    count = 0
    offset = 0
    with path.open("rb") as handle:
        while data := handle.read(block):
            at = data.find(b"\n")
            while at >= 0:
                count += 1
                if count == lines:
                    end = offset + at + 1
                    yield start, end, number
                    start, number, count = end, number + count, 0
                at = data.find(b"\n", at + 1)
            offset += len(data)
    if offset > start:
        yield start, offset, number


def read_line_range(path: Path, start: int, end: int, number: int) -> list[tuple[str, bytes]]:
    """The records of one `line_ranges` range, labelled and filtered exactly as `iter_records` does.

    The range is read once, so its pages are then released from the page cache: an input larger than
    memory would otherwise push out the build's own spill files (read again when ranking and
    exporting) and even the libraries' code."""
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(handle.fileno(), start, end - start, os.POSIX_FADV_DONTNEED)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return [
        (f"{path.name}:{n}", line.rstrip(b"\r\n"))
        for n, line in enumerate(lines, start=number)
        if line.strip()
    ]
