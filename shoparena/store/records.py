"""From a `TrajectoryRecord` to a store row: its canonical bytes, content hash and provenance columns."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store.engine import CanonicalJSON
from shoparena.store.schema import Evaluation

MAX_LENGTHS = {
    column.name: column.type.length
    for column in Evaluation.__table__.columns
    if getattr(column.type, "length", None) is not None
}
"""PostgreSQL enforces VARCHAR lengths (SQLite does not): checked up front so both dialects agree."""


class RecordRejected(ValueError):
    """A record the store cannot take; the message says why."""


@dataclass(slots=True)
class PreparedRecord:
    """One record ready to insert: the row plus where it came from (internal, built thousands per second)."""

    record_id: str
    content_sha256: str
    row: dict[str, Any]
    source: str


def canonical_bytes(record: TrajectoryRecord) -> bytes:
    """The record's one serialisation: compact JSON of `model_dump(mode="json")` in model field order.

    Its sha256 is the content hash, so any serialisation of the same record (the eval runner splices
    score and judge onto the end of its lines) is the same record, and a JSONL export returns exactly
    these bytes. The key order inside free-form dicts (messages, tool schemas, call results) is part of
    it, which is why PostgreSQL keeps the text beside the jsonb.
    """
    return orjson.dumps(record.model_dump(mode="json"))


def content_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_started_at(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise RecordRejected(f"timings.started_at {text!r} is not an ISO-8601 time") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def prepare(
    record: TrajectoryRecord,
    source: str,
    ingested_at: datetime,
    dialect: str,
    data: bytes | None = None,
) -> PreparedRecord:
    """The insertable row for `record`; raises `RecordRejected` with the reason when it cannot be stored."""
    data = canonical_bytes(record) if data is None else data
    if dialect == "postgresql" and b"\\u0000" in data:
        raise RecordRejected("contains a NUL character (\\u0000), which PostgreSQL jsonb cannot store")
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
    text = data.decode()
    row["record"] = CanonicalJSON(text)
    row["record_text"] = text if dialect == "postgresql" else None
    for name, limit in MAX_LENGTHS.items():
        value = row[name]
        if value is not None and len(value) > limit:
            raise RecordRejected(f"{name} is {len(value)} characters long; the store keeps at most {limit}")
    return PreparedRecord(
        record_id=record.record_id, content_sha256=row["content_sha256"], row=row, source=source
    )
