"""Exports of stored evaluations: JSONL of the canonical records, or Parquet of provenance columns.

JSONL lines are the records exactly as ingested, in canonical form (`records.canonical_bytes`, each
line checked against its content hash on the way out). Parquet carries the flat provenance columns plus the record as a JSON
string. Both stream page by page and write to a temporary file renamed into place when complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine, Text, cast, func

from shoparena.index.staging import staged_file
from shoparena.store.errors import StoreError, StoreIntegrityError
from shoparena.store.query import DEFAULT_PAGE, EVALUATIONS, RecordFilter, invalidated_clause, iter_rows
from shoparena.store.records import content_sha256

ExportFormat = Literal["jsonl", "parquet"]
EXPORT_FORMATS = ("jsonl", "parquet")

PARQUET_COLUMNS = (
    "record_id",
    "content_sha256",
    "schema_version",
    "run_id",
    "sample",
    "agent_id",
    "agent_kind",
    "agent_version",
    "agent_spec",
    "miner_hotkey",
    "validator_hotkey",
    "problem_id",
    "bucket",
    "suite",
    "suite_version",
    "leak_cluster_id",
    "scoring_mode",
    "scoring_pipeline_version",
    "success",
    "rule_score",
    "judge_quality",
    "judge_gate",
    "steps_used",
    "agent_error",
    "shoparena_version",
    "created_at",
    "ingested_at",
)


def stored_text_column():
    """The canonical text of each row on either dialect (see `Evaluation.record_text`)."""
    return func.coalesce(EVALUATIONS.c.record_text, cast(EVALUATIONS.c.record, Text))


def verified_record_bytes(record_id: str, sha256: str, stored_text: str) -> bytes:
    """The record's canonical bytes, proven against its content hash (a cheap check on every export)."""
    data = stored_text.encode()
    if content_sha256(data) != sha256:
        raise StoreIntegrityError(
            f"record {record_id}: stored content no longer matches its content hash {sha256[:12]}…"
        )
    return data


def iter_canonical(
    engine: Engine, where: RecordFilter, page: int = DEFAULT_PAGE
) -> Iterator[tuple[str, bytes]]:
    """(record_id, canonical bytes) for every selected record, in ingest order."""
    c = EVALUATIONS.c
    for rows in iter_rows(engine, (c.record_id, c.content_sha256, stored_text_column()), where, page):
        for record_id, sha256, text in rows:
            yield record_id, verified_record_bytes(record_id, sha256, text)


def _replace_atomically(out: Path, write: Callable[[Path], int]) -> int:
    out = Path(out)
    if not out.parent.is_dir():
        raise StoreError(f"--out {out}: directory {out.parent} does not exist")
    with staged_file(out) as partial:
        return write(partial)


def export_jsonl(
    engine: Engine,
    where: RecordFilter,
    out: Path,
    progress: Callable[[int], None] | None = None,
    page: int = DEFAULT_PAGE,
) -> int:
    def write(path: Path) -> int:
        written = 0
        with path.open("wb") as handle:
            for _record_id, data in iter_canonical(engine, where, page):
                handle.write(data + b"\n")
                written += 1
                if progress is not None and written % page == 0:
                    progress(page)
        if progress is not None and written % page:
            progress(written % page)
        return written

    return _replace_atomically(out, write)


def parquet_schema(with_invalidated: bool):
    import pyarrow as pa

    types: dict[str, Any] = {name: pa.string() for name in PARQUET_COLUMNS}
    types.update(
        sample=pa.int32(),
        success=pa.bool_(),
        rule_score=pa.float64(),
        judge_quality=pa.float64(),
        steps_used=pa.int32(),
        agent_error=pa.bool_(),
        created_at=pa.timestamp("us", tz="UTC"),
        ingested_at=pa.timestamp("us", tz="UTC"),
    )
    fields = [pa.field(name, types[name]) for name in PARQUET_COLUMNS]
    if with_invalidated:
        fields.append(pa.field("invalidated", pa.bool_()))
    fields.append(pa.field("record", pa.string()))
    return pa.schema(fields)


def export_parquet(
    engine: Engine,
    where: RecordFilter,
    out: Path,
    progress: Callable[[int], None] | None = None,
    page: int = DEFAULT_PAGE,
) -> int:
    """One row group per page; an `invalidated` column is added when invalidated rows are included."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    c = EVALUATIONS.c
    schema = parquet_schema(where.include_invalidated)
    columns = [c[name] for name in PARQUET_COLUMNS]
    if where.include_invalidated:
        columns.append(invalidated_clause().label("invalidated"))
    columns.append(stored_text_column())

    def write(path: Path) -> int:
        written = 0
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            for rows in iter_rows(engine, columns, where, page):
                data: dict[str, list] = {name: [] for name in schema.names}
                for row in rows:
                    values = dict(zip(schema.names, row, strict=True))
                    values["record"] = verified_record_bytes(
                        values["record_id"], values["content_sha256"], values["record"]
                    ).decode()
                    for name, value in values.items():
                        data[name].append(value)
                writer.write_table(pa.Table.from_pydict(data, schema=schema))
                written += len(rows)
                if progress is not None:
                    progress(len(rows))
        return written

    return _replace_atomically(out, write)


def export(
    engine: Engine,
    where: RecordFilter,
    out: Path,
    fmt: ExportFormat = "jsonl",
    progress: Callable[[int], None] | None = None,
) -> int:
    if fmt == "jsonl":
        return export_jsonl(engine, where, out, progress)
    if fmt == "parquet":
        return export_parquet(engine, where, out, progress)
    raise StoreError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
