"""Streaming reader for the upstream catalogue format (SPEC §1).

Upstream ships ~2.7M lines of `{"id", "contents", "product": {...}}` (optionally gzipped). The loader
never holds more than one line in memory, so it scales with the file, and a bad line never stops a
build: it is reported with its line number and reason, counted and skipped (unless `strict`). Lines
are read as bytes, so one undecodable byte costs its line only, not the build.

Two kinds of failure, kept apart on purpose:
- `CatalogFormatError`: one line cannot be used (bad JSON, not UTF-8, a wrong field); skip it.
- `CatalogReadError`: the input as a whole cannot be read (missing, a directory, not gzip, a gzip
  stream that ends early); no build may pretend to be complete, so the caller stops.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from codecs import BOM_UTF8
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

import orjson
from pydantic import ValidationError

from shoparena.catalog.models import Product

MAX_REPORTED_ERRORS = 1000
MAX_LINE_BYTES = 4 * 2**20
"""Upstream lines are ~2 KB; a longer line is skipped unread, so one runaway line cannot exhaust memory."""
GZIP_MAGIC = b"\x1f\x8b"
_READ_CHUNK = 2**20


class CatalogFormatError(ValueError):
    """A catalogue line that cannot be read; carries where and why."""

    def __init__(self, source: str, line_no: int, reason: str):
        super().__init__(f"{source}:{line_no}: {reason}")
        self.source = source
        self.line_no = line_no
        self.reason = reason


class CatalogReadError(ValueError):
    """The input as a whole cannot be read; says what and how far reading got."""

    def __init__(
        self,
        source: str,
        problem: str,
        lines_read: int | None = None,
        examples: list[CatalogFormatError] | None = None,
    ):
        where = f" ({lines_read:,} complete line(s) read)" if lines_read is not None else ""
        super().__init__(f"{source}: {problem}{where}")
        self.source = source
        self.lines_read = lines_read
        self.examples = examples or []


@dataclass(frozen=True)
class CatalogRecord:
    """One catalogue line: the product plus the BM25 text upstream indexed for it."""

    product: Product
    contents: str
    line_no: int = 0


class RawLine(NamedTuple):
    """One physical line of the input, without its line break; `data` is None when it was too long."""

    line_no: int
    data: bytes | None
    size: int


RejectSink = Callable[[CatalogFormatError, bytes | None], None]


@dataclass
class LoadReport:
    """What a load saw: every line accounted for, and the first reasons (capped so memory stays bounded).

    `lines_read == loaded + rejected + blank`. Every rejected line also goes to `on_reject` (with its
    raw bytes) as it happens, so a caller can record all of them, past the in-memory cap.
    """

    source: str
    lines_read: int = 0
    loaded: int = 0
    rejected: int = 0
    blank: int = 0
    errors: list[CatalogFormatError] = field(default_factory=list)
    on_reject: RejectSink | None = None

    def reject(self, error: CatalogFormatError, raw: bytes | None = None) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(error)
        if self.on_reject is not None:
            self.on_reject(error, raw)


def reject_record(error: CatalogFormatError, raw: bytes | None) -> dict:
    """A rejects.jsonl entry: where, why, and the line itself so nothing is lost (as text when it is
    UTF-8, else base64; only a line over the size limit, skipped unread, is left for `sed -n Np`)."""
    record: dict = {"line": error.line_no, "reason": error.reason}
    if raw is None:
        return record
    try:
        record["raw"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        record["raw_base64"] = base64.b64encode(raw).decode("ascii")
    return record


def check_source(path: Path) -> None:
    """Raise `CatalogReadError` if `path` is no file to read a catalogue from (a command calls this
    before it starts its progress bar; reading calls it too)."""
    if not path.exists():
        raise CatalogReadError(str(path), "no such file")
    if path.is_dir():
        raise CatalogReadError(str(path), "is a directory; give a .jsonl or .jsonl.gz catalogue file")


def _open_binary(path: Path, stack: ExitStack) -> IO[bytes]:
    """Open the input as bytes, decompressing gzip (recognised by its content, not by its name)."""
    source = str(path)
    check_source(path)
    try:
        handle = stack.enter_context(path.open("rb"))
    except PermissionError:
        raise CatalogReadError(source, "cannot be read: permission denied") from None
    except OSError as exc:
        raise CatalogReadError(source, f"cannot be opened: {exc.strerror or exc}") from None
    head = handle.peek(2)[:2]  # peek, not read: a pipe cannot seek back
    if head == GZIP_MAGIC:
        # read line by line (no extra buffer on top): on a truncated stream, every line before the
        # break has been seen, so the count in the error is exact
        return stack.enter_context(gzip.GzipFile(fileobj=handle, mode="rb"))
    if path.suffix == ".gz":
        raise CatalogReadError(source, f"is named .gz but is not gzip (it starts with {head!r})")
    return handle


def read_lines(path: Path) -> Iterator[RawLine]:
    """Every line of a .jsonl or gzipped .jsonl file as bytes, numbered from 1; a UTF-8 byte-order mark
    at the start is dropped (it belongs to the file, not to line 1). A gzip stream that ends early or
    is corrupt raises `CatalogReadError` with the count of lines read, never a partial success."""
    source = str(path)
    line_no = 0
    with ExitStack() as stack:
        handle = _open_binary(path, stack)
        try:
            while True:
                data = handle.readline(MAX_LINE_BYTES + 1)
                if not data:
                    return
                line_no += 1
                size = len(data)
                if size > MAX_LINE_BYTES and not data.endswith(b"\n"):
                    while data and not data.endswith(b"\n"):  # skip the rest of the line unread
                        data = handle.readline(_READ_CHUNK)
                        size += len(data)
                    yield RawLine(line_no, None, size - 1 if data.endswith(b"\n") else size)
                    continue
                data = data.rstrip(b"\r\n")
                if line_no == 1:
                    data = data.removeprefix(BOM_UTF8)
                yield RawLine(line_no, data, len(data))
        except EOFError:
            raise CatalogReadError(
                source, "truncated gzip: the compressed stream ends before its end marker", line_no
            ) from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise CatalogReadError(source, f"corrupt gzip ({exc})", line_no) from None
        except OSError as exc:
            raise CatalogReadError(source, f"read error ({exc.strerror or exc})", line_no) from None


def _explain(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"product.{loc}: {message}" if loc else f"product: {message}")
    return "; ".join(parts)


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _json_error(raw: str | bytes, exc: orjson.JSONDecodeError) -> str:
    if isinstance(raw, bytes):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return f"not valid UTF-8: byte 0x{raw[bad.start]:02x} at column {bad.start + 1}"
    return f"invalid JSON: {exc}"


def parse_catalog_line(raw: str | bytes, source: str = "<input>", line_no: int = 0) -> CatalogRecord:
    """Parse one upstream catalogue line, or raise `CatalogFormatError` naming the problem.

    Accepts the upstream wrapper `{"id", "contents", "product"}` and, for convenience, a bare product
    object (the shape of the web-task gold records). Anything else is rejected, never guessed.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CatalogFormatError(source, line_no, _json_error(raw, exc)) from None
    if not isinstance(data, dict):
        raise CatalogFormatError(source, line_no, f"expected a JSON object, got {type(data).__name__}")
    # JSON can only carry NUL escaped; look closer only then, so clean lines pay one byte search
    backslash, escaped_nul = (b"\\", b"\\u0000") if isinstance(raw, bytes) else ("\\", "\\u0000")
    if backslash in raw and escaped_nul in raw and _has_nul(data):
        raise CatalogFormatError(
            source, line_no, "contains a NUL character (U+0000), which no catalogue text may hold"
        )
    if "product" in data:
        product_data = data["product"]
        if not isinstance(product_data, dict):
            raise CatalogFormatError(source, line_no, "'product' must be an object")
        line_id = data.get("id")
        if line_id is None or line_id == "":
            line_id = product_data.get("product_id")
        if line_id is None or line_id == "":
            raise CatalogFormatError(source, line_no, "missing id (neither 'id' nor 'product.product_id')")
        if isinstance(line_id, bool) or not isinstance(line_id, (str, int)):
            raise CatalogFormatError(source, line_no, f"'id' must be a string, got {type(line_id).__name__}")
        product_data = {**product_data}
        inner = product_data.setdefault("product_id", line_id)
        if str(inner) != str(line_id):
            raise CatalogFormatError(
                source, line_no, f"'id' {line_id!r} disagrees with product.product_id {inner!r}"
            )
        contents = data.get("contents")
        if contents is not None and not isinstance(contents, str):
            raise CatalogFormatError(source, line_no, "'contents' must be a string")
    elif "product_id" in data:
        product_data, contents = data, None
    else:
        raise CatalogFormatError(source, line_no, "missing id: not an upstream catalogue line")
    try:
        product = Product.model_validate(product_data)
    except ValidationError as exc:
        raise CatalogFormatError(source, line_no, _explain(exc)) from None
    return CatalogRecord(product=product, contents=contents or product.search_contents(), line_no=line_no)


def iter_catalog(
    path: Path, report: LoadReport | None = None, strict: bool = False
) -> Iterator[CatalogRecord]:
    """Stream records from an upstream catalogue file; bad lines go to `report` (or raise if strict).

    Raises `CatalogReadError` when the file as a whole cannot be read (see `read_lines`).
    """
    source = str(path)
    report = report if report is not None else LoadReport(source=source)
    for line in read_lines(path):
        report.lines_read += 1
        if line.data is None:
            error = CatalogFormatError(
                source, line.line_no, f"line is {line.size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
            )
        elif not line.data or line.data.isspace():
            report.blank += 1
            continue
        else:
            try:
                record = parse_catalog_line(line.data, source, line.line_no)
            except CatalogFormatError as exc:
                error = exc
            else:
                report.loaded += 1
                yield record
                continue
        if strict:
            raise error
        report.reject(error, line.data)


def catalog_line(product: Product, contents: str | None = None) -> bytes:
    """Serialise a product as one upstream catalogue line (without the newline)."""
    payload = product.model_dump(mode="json")
    return orjson.dumps(
        {"id": product.product_id, "contents": contents or product.search_contents(), "product": payload}
    )
