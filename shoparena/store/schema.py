"""The store's tables as SQLAlchemy models (the alembic migrations create them; a test checks they agree).

`evaluations` holds one row per canonical trajectory record: the provenance SPEC §6 asks for as flat,
indexed columns, plus the whole record as JSON (JSONB on PostgreSQL, with its exact text beside it).
Rows are append-only — database
triggers reject UPDATE and DELETE — so a wrong evaluation is withdrawn by a row in `invalidations`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

EVALUATIONS = "evaluations"
INVALIDATIONS = "invalidations"
APPEND_ONLY_TABLES = (EVALUATIONS, INVALIDATIONS)

RowId = BigInteger().with_variant(Integer(), "sqlite")
"""SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity."""

RecordJSON = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator):
    """Timestamps are stored in UTC and come back timezone-aware on both dialects.

    SQLite keeps datetimes as text without an offset, so anything else would compare local times
    against UTC ones; naive inputs are taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class Evaluation(Base):
    """One stored trajectory record (append-only)."""

    __tablename__ = EVALUATIONS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    record_id: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    content_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    """sha256 of the canonical record bytes: what makes re-ingest idempotent and export verifiable."""
    schema_version: Mapped[str] = mapped_column(String(64), nullable=False)
    run_id: Mapped[str] = mapped_column(String(128), nullable=False)
    sample: Mapped[int] = mapped_column(Integer, nullable=False)
    agent_id: Mapped[str] = mapped_column(String(256), nullable=False)
    agent_kind: Mapped[str] = mapped_column(String(64), nullable=False)
    agent_version: Mapped[str] = mapped_column(String(128), nullable=False)
    agent_spec: Mapped[str] = mapped_column(Text, nullable=False)
    miner_hotkey: Mapped[str | None] = mapped_column(String(128))
    validator_hotkey: Mapped[str | None] = mapped_column(String(128))
    problem_id: Mapped[str] = mapped_column(String(128), nullable=False)
    bucket: Mapped[str] = mapped_column(String(32), nullable=False)
    suite: Mapped[str | None] = mapped_column(String(128))
    suite_version: Mapped[str | None] = mapped_column(String(128))
    leak_cluster_id: Mapped[str | None] = mapped_column(String(128))
    scoring_mode: Mapped[str] = mapped_column(String(32), nullable=False)
    scoring_pipeline_version: Mapped[str] = mapped_column(String(64), nullable=False)
    success: Mapped[bool | None] = mapped_column(Boolean)
    rule_score: Mapped[float | None] = mapped_column(Float)
    judge_quality: Mapped[float | None] = mapped_column(Float)
    judge_gate: Mapped[str | None] = mapped_column(String(64))
    steps_used: Mapped[int] = mapped_column(Integer, nullable=False)
    agent_error: Mapped[bool] = mapped_column(Boolean, nullable=False)
    shoparena_version: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    """When the episode started (the record's `timings.started_at`)."""
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    record: Mapped[dict[str, Any]] = mapped_column(RecordJSON, nullable=False)
    """The whole record, queryable in the database (`record->'score'->>'rule'`)."""
    record_text: Mapped[str | None] = mapped_column(Text)
    """The exact canonical bytes where `record` cannot keep them: PostgreSQL's jsonb reorders object keys
    (free-form dicts like messages and tool schemas included). NULL on SQLite, whose JSON column is
    already that very text, so the trace is not stored twice there."""
    commit_order: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default=text("0"))
    """PostgreSQL: the id of the transaction that wrote the row (`pg_current_xact_id()`, set by the
    database), which lets a follower read rows in an order that no later commit can land behind
    (`shoparena.store.feed`). 0 on SQLite, where row ids are already handed out in commit order, and on
    rows written before migration 0002."""

    __table_args__ = (
        Index("ix_evaluations_agent_created", "agent_id", "created_at"),
        Index("ix_evaluations_miner_hotkey", "miner_hotkey"),
        Index("ix_evaluations_problem_id", "problem_id"),
        Index("ix_evaluations_suite", "suite", "suite_version"),
        Index("ix_evaluations_run_id", "run_id"),
        Index("ix_evaluations_created_at", "created_at"),
        Index("ix_evaluations_bucket", "bucket"),
        Index("ix_evaluations_commit_order", "commit_order", "id"),
    )


class Invalidation(Base):
    """The withdrawal of one evaluation: a new row that refers to the old one, never an edit of it."""

    __tablename__ = INVALIDATIONS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    record_id: Mapped[str] = mapped_column(
        String(64), ForeignKey(f"{EVALUATIONS}.record_id", name="fk_invalidations_record_id"), nullable=False
    )
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    invalidated_by: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_invalidations_record_id", "record_id"),)
