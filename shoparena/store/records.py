"""From a `TrajectoryRecord` to a store row: its canonical bytes, content hash and provenance columns.

Whatever one database would refuse, or would keep differently from the other, is decided here first,
so SQLite and PostgreSQL take exactly the same records and reject the rest with the same reason:

- A NUL character in free text (model output, a tool result) is kept. The canonical JSON escapes it
  (`\\u0000`), which a SQLite JSON column and a PostgreSQL `text` column both hold verbatim, and an
  export returns those exact bytes. Only PostgreSQL's queryable `jsonb` copy cannot hold a NUL: there
  each NUL is spelled as the six characters `\\u0000`, while the record itself is untouched. Rejecting
  such records instead would let any agent keep its episodes out of the append-only store by printing
  one NUL, and would lose real evaluations.
- A NUL in a provenance column (ids, agent, suite, hotkeys) is rejected on both: an id that a C string,
  a terminal or a file name truncates is corruption, not data.
- Numbers JSON cannot carry exactly are rejected: NaN and ±Infinity (orjson writes them as `null`, so
  the stored record would no longer be the one ingested, nor even valid) and integers beyond 64 bits
  (the canonical encoder refuses them and orjson readers downstream turn them into floats). Integer
  columns are range-checked to 32 bits and string columns to their lengths, as PostgreSQL enforces.
- Only record schemas this version knows are stored: a record claiming another `schema_version` is
  from a newer shoparena or forged, and its fields would be misread into our columns.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel

from shoparena.records.trajectory import READABLE_SCHEMAS, TrajectoryRecord
from shoparena.store.engine import CanonicalJSON
from shoparena.store.rejects import UNKNOWN_SCHEMA, UNSTORABLE, Where
from shoparena.store.schema import Evaluation

MAX_LENGTHS = {
    column.name: column.type.length
    for column in Evaluation.__table__.columns
    if getattr(column.type, "length", None) is not None
}
"""PostgreSQL enforces VARCHAR lengths (SQLite does not): checked up front so both dialects agree."""
INT32_COLUMNS = ("sample", "steps_used")
INT32_RANGE = (-(2**31), 2**31 - 1)
"""PostgreSQL `integer` columns hold 32 bits (SQLite's hold 64): checked up front so both agree."""
KNOWN_SCHEMAS = READABLE_SCHEMAS
ESCAPED_NUL = b"\\u0000"


class RecordRejected(ValueError):
    """A record the store cannot take; the message says why, `kind` is the reason code."""

    def __init__(self, message: str, kind: str = UNSTORABLE):
        super().__init__(message)
        self.kind = kind


@dataclass(slots=True)
class PreparedRecord:
    """One record ready to insert: the row plus where it came from (internal, built thousands per second)."""

    record_id: str
    content_sha256: str
    row: dict[str, Any]
    where: Where


def canonical_bytes(record: TrajectoryRecord) -> bytes:
    """The record's one serialisation: compact JSON of `model_dump(mode="json")` in model field order.

    Its sha256 is the content hash, so any serialisation of the same record (the eval runner splices
    score and judge onto the end of its lines) is the same record, and a JSONL export returns exactly
    these bytes. The key order inside free-form dicts (messages, tool schemas, call results) is part of
    it, which is why PostgreSQL keeps the text beside the jsonb. Raises `RecordRejected` for a record
    JSON cannot carry exactly (see the module docstring).
    """
    return _encode(record, record.model_dump(mode="json"))


def _encode(record: TrajectoryRecord, dumped: dict[str, Any]) -> bytes:
    # The walk is over the model, not the dump: in `model_dump(mode="json")` a NaN inside a free-form
    # dict (score, messages, call results) has already become None, while a typed float field keeps it.
    found = _first_non_finite(record) if _has_non_finite(record) else None
    if found is not None:
        where, value = found
        raise RecordRejected(
            f"{where} is {value}: JSON has no NaN or Infinity, and writing it as null would change the record"
        )
    try:
        return orjson.dumps(dumped)
    except orjson.JSONEncodeError as exc:  # lone surrogates, integers beyond 64 bits
        raise RecordRejected(f"cannot be written as canonical JSON: {exc}") from None


def _has_non_finite(value: Any) -> bool:
    """A fast scan (no paths kept): it runs on every record, and most hold thousands of strings.

    Exact type tests in the order values are common (strings first) keep it a fraction of parsing.
    """
    stack = [value]
    pop, push, isfinite = stack.pop, stack.extend, math.isfinite
    while stack:
        item = pop()
        kind = type(item)
        if kind is str:
            continue
        if kind is dict:
            push(item.values())
        elif kind is list:
            push(item)
        elif kind is float:
            if not isfinite(item):
                return True
        elif kind is int or kind is bool or item is None:
            continue
        elif isinstance(item, BaseModel):
            push(item.__dict__.values())
        elif isinstance(item, float):  # subclasses, e.g. numpy.float64
            if not isfinite(item):
                return True
        elif isinstance(item, dict):
            push(item.values())
        elif isinstance(item, list | tuple):
            push(item)
    return False


def _first_non_finite(value: Any, path: tuple[str, ...] = ()) -> tuple[str, float] | None:
    """Where the first NaN/Infinity is, as a dotted path (`messages.3.content`), for the reject reason."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".".join(path) or "(record)", value
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    elif isinstance(value, BaseModel):
        items = value.__dict__.items()
    else:
        return None
    for key, item in items:
        found = _first_non_finite(item, (*path, str(key)))
        if found is not None:
            return found
    return None


def _nul_spelled_out(value: Any) -> Any:
    """`value` with every NUL in its strings and keys written as the six characters `\\u0000`."""
    if isinstance(value, str):
        return value.replace("\x00", "\\u0000")
    if isinstance(value, list):
        return [_nul_spelled_out(item) for item in value]
    if isinstance(value, dict):
        return {_nul_spelled_out(key): _nul_spelled_out(item) for key, item in value.items()}
    return value


def content_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_started_at(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise RecordRejected(
            f"timings.started_at {text!r} is not an ISO-8601 time within years 1–9999"
        ) from exc


def _check_columns(row: dict[str, Any]) -> None:
    for name, limit in MAX_LENGTHS.items():
        value = row[name]
        if value is not None and len(value) > limit:
            raise RecordRejected(f"{name} is {len(value)} characters long; the store keeps at most {limit}")
    for name, value in row.items():
        if isinstance(value, str) and "\x00" in value:
            raise RecordRejected(f"{name} {value!r} holds a NUL character, which no identifier may")
    low, high = INT32_RANGE
    for name in INT32_COLUMNS:
        if not low <= row[name] <= high:
            raise RecordRejected(f"{name} {row[name]} is outside the store's 32-bit integer range")


def prepare(record: TrajectoryRecord, where: Where, ingested_at: datetime, dialect: str) -> PreparedRecord:
    """The insertable row for `record`; raises `RecordRejected` with the reason when it cannot be stored."""
    if record.schema_version not in KNOWN_SCHEMAS:
        raise RecordRejected(
            f"schema_version {record.schema_version!r} is not one this store reads "
            f"({', '.join(KNOWN_SCHEMAS)}): a record from a newer shoparena, or a forged one",
            UNKNOWN_SCHEMA,
        )
    dumped = record.model_dump(mode="json")
    data = _encode(record, dumped)
    judge = record.judge
    row = {
        "record_id": record.record_id,
        "content_sha256": content_sha256(data),
        "schema_version": record.schema_version,
        "run_id": record.run_id,
        "sample": record.sample,
        "agent_id": record.agent.agent_id,
        "agent_kind": record.agent.kind,
        "agent_version": record.agent.version,
        "agent_spec": record.agent.spec,
        "miner_hotkey": record.agent.miner_hotkey,
        "validator_hotkey": record.validator_hotkey,
        "problem_id": record.problem.problem_id,
        "bucket": record.problem.bucket,
        "suite": record.problem.suite,
        "suite_version": record.problem.suite_version,
        "leak_cluster_id": record.problem.leak_cluster_id,
        "scoring_mode": record.scoring_mode,
        "scoring_pipeline_version": record.scoring_pipeline_version,
        "success": record.score.success,
        "rule_score": record.score.rule,
        "judge_quality": judge.quality if judge else None,
        "judge_gate": judge.gate if judge else None,
        "steps_used": record.outcome.steps_used,
        "agent_error": record.outcome.error is not None,
        "shoparena_version": record.shoparena_version,
        "created_at": parse_started_at(record.timings.started_at),
        "ingested_at": ingested_at,
    }
    _check_columns(row)
    text = data.decode()
    if dialect == "postgresql":
        row["record_text"] = text
        if ESCAPED_NUL in data:  # the one thing jsonb refuses (see the module docstring)
            text = orjson.dumps(_nul_spelled_out(dumped)).decode()
    else:
        row["record_text"] = None
    row["record"] = CanonicalJSON(text)
    return PreparedRecord(
        record_id=record.record_id, content_sha256=row["content_sha256"], row=row, where=where
    )
