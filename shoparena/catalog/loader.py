"""Streaming reader for the upstream catalogue format (SPEC §1).

Upstream ships ~2.7M lines of `{"id", "contents", "product": {...}}` (optionally gzipped). The loader
never holds more than one line in memory, so it scales with the file, and a bad line never stops a
build: it is reported with its line number and reason, counted and skipped (unless `strict`).
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson
from pydantic import ValidationError

from shoparena.catalog.models import Product

MAX_REPORTED_ERRORS = 1000


class CatalogFormatError(ValueError):
    """A catalogue line that cannot be read; carries where and why."""

    def __init__(self, source: str, line_no: int, reason: str):
        super().__init__(f"{source}:{line_no}: {reason}")
        self.source = source
        self.line_no = line_no
        self.reason = reason


@dataclass(frozen=True)
class CatalogRecord:
    """One catalogue line: the product plus the BM25 text upstream indexed for it."""

    product: Product
    contents: str


@dataclass
class LoadReport:
    """What a load saw: good lines, bad lines, and the first reasons (capped so memory stays bounded)."""

    source: str
    loaded: int = 0
    rejected: int = 0
    errors: list[CatalogFormatError] = field(default_factory=list)

    def reject(self, error: CatalogFormatError) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(error)


def open_text(path: Path) -> IO[str]:
    """Open a .jsonl or .jsonl.gz file for reading as UTF-8 text."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return path.open("r", encoding="utf-8")


def _explain(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"]) or "(record)"
        parts.append(f"product.{loc}: {item['msg']}")
    return "; ".join(parts)


def parse_catalog_line(raw: str | bytes, source: str = "<input>", line_no: int = 0) -> CatalogRecord:
    """Parse one upstream catalogue line, or raise `CatalogFormatError` naming the problem.

    Accepts the upstream wrapper `{"id", "contents", "product"}` and, for convenience, a bare product
    object (the shape of the web-task gold records). Anything else is rejected, never guessed.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CatalogFormatError(source, line_no, f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CatalogFormatError(source, line_no, f"expected a JSON object, got {type(data).__name__}")
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
    return CatalogRecord(product=product, contents=contents or product.search_contents())


def iter_catalog(
    path: Path, report: LoadReport | None = None, strict: bool = False
) -> Iterator[CatalogRecord]:
    """Stream records from an upstream catalogue file; bad lines go to `report` (or raise if strict)."""
    report = report if report is not None else LoadReport(source=str(path))
    with open_text(path) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = parse_catalog_line(line, str(path), line_no)
            except CatalogFormatError as error:
                if strict:
                    raise
                report.reject(error)
                continue
            report.loaded += 1
            yield record


def catalog_line(product: Product, contents: str | None = None) -> bytes:
    """Serialise a product as one upstream catalogue line (without the newline)."""
    payload = product.model_dump(mode="json")
    return orjson.dumps(
        {"id": product.product_id, "contents": contents or product.search_contents(), "product": payload}
    )
