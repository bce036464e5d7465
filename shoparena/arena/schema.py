"""The arena's tables (the alembic migrations in `arena/migrations` create them; a test checks they agree).

They live in the same database as the trajectory store (`evaluations`), under their own alembic version
table, so a validator's result and its trajectory records can be written in one transaction.

Append-only (database triggers refuse UPDATE and DELETE): `submissions`, `submission_events`,
`submission_results`, `problem_results`, `audit`. A submission's status is never a column that
changes: it is its newest event row, so the history of every submission stays readable.
The job layer's tables are append-only too: `jobs` (what a job evaluates), `job_leases` (a validator's
claim on a job) and `lease_events` (heartbeats, and how each lease ended), so a lease's expiry is the
newest heartbeat, never an updated column.
`neurons` (the local metagraph) is the one mutable table: it mirrors who is registered now — a fact
about the outside world (the chain, or the operator), not an evaluation — and a chain sync replaces it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shoparena.store.schema import RowId, UTCDateTime

NEURONS = "neurons"
SUBMISSIONS = "submissions"
SUBMISSION_EVENTS = "submission_events"
SUBMISSION_RESULTS = "submission_results"
PROBLEM_RESULTS = "problem_results"
AUDIT = "audit"
JOBS = "jobs"
JOB_LEASES = "job_leases"
LEASE_EVENTS = "lease_events"
APPEND_ONLY_TABLES = (
    SUBMISSIONS,
    SUBMISSION_EVENTS,
    SUBMISSION_RESULTS,
    PROBLEM_RESULTS,
    AUDIT,
    JOBS,
    JOB_LEASES,
    LEASE_EVENTS,
)
VERSION_TABLE = "arena_alembic_version"
"""Alembic's bookkeeping for these tables, apart from the trajectory store's `alembic_version`."""

HOTKEY_LENGTH = 64
SUBMISSION_ID_LENGTH = 40
NAME_LENGTH = 128


class Base(DeclarativeBase):
    pass


class Neuron(Base):
    """A registered hotkey and its role (mutable: the metagraph as it is now)."""

    __tablename__ = NEURONS

    hotkey: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), primary_key=True)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    """`miner` or `validator`."""
    stake: Mapped[float] = mapped_column(Float, nullable=False)
    uid: Mapped[int | None] = mapped_column(Integer)
    """The chain uid, when the chain adapter filled the row (weights are set per uid)."""
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    """`local` (arena register) or `chain`."""
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class Submission(Base):
    """One submitted file, admitted or rejected (append-only). Its status is its newest event."""

    __tablename__ = SUBMISSIONS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(String(SUBMISSION_ID_LENGTH), unique=True, nullable=False)
    miner_hotkey: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), nullable=False)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    code_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    """Key of the code in the code store."""
    code_size: Mapped[int] = mapped_column(Integer, nullable=False)
    admitted: Mapped[bool] = mapped_column(Boolean, nullable=False)
    violations: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)
    """Admission's findings (empty when admitted)."""
    cooldown_s: Mapped[int] = mapped_column(Integer, nullable=False)
    """How long this submission bars its hotkey from submitting again (fixed when it was made, so a
    later change of the policy does not rewrite history)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_submissions_miner_created", "miner_hotkey", "created_at"),)


class SubmissionEvent(Base):
    """A status change of a submission (append-only): queued, running, scored, failed, rejected."""

    __tablename__ = SUBMISSION_EVENTS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(
        String(SUBMISSION_ID_LENGTH),
        ForeignKey(f"{SUBMISSIONS}.submission_id", name="fk_submission_events_submission"),
        nullable=False,
    )
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    actor: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), nullable=False)
    """`arena` or the hotkey of the validator that caused the change."""
    job_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (
        Index("ix_submission_events_submission", "submission_id", "id"),
        Index("ix_submission_events_status", "status"),
    )


class SubmissionResult(Base):
    """One validator's evaluation of a submission (append-only); the aggregates are computed by the
    arena from the per-problem rows, never taken from the validator."""

    __tablename__ = SUBMISSION_RESULTS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(
        String(SUBMISSION_ID_LENGTH),
        ForeignKey(f"{SUBMISSIONS}.submission_id", name="fk_submission_results_submission"),
        nullable=False,
    )
    job_id: Mapped[str] = mapped_column(String(64), nullable=False)
    validator_hotkey: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), nullable=False)
    content_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    """Hash of the posted result: a retried post with equal content is the same result, a different one
    under the same (job, validator) a conflict."""
    suite: Mapped[str | None] = mapped_column(String(128))
    suite_version: Mapped[str | None] = mapped_column(String(128))
    scoring_pipeline_version: Mapped[str] = mapped_column(String(64), nullable=False)
    problems: Mapped[int] = mapped_column(Integer, nullable=False)
    successes: Mapped[int] = mapped_column(Integer, nullable=False)
    asr: Mapped[float] = mapped_column(Float, nullable=False)
    """successes / problems: every problem of the suite counts (crashes and timeouts are failures)."""
    mean_rule_score: Mapped[float | None] = mapped_column(Float)
    judge_quality: Mapped[float | None] = mapped_column(Float)
    """q: mean judge quality over the judged problems."""
    coefficient: Mapped[float | None] = mapped_column(Float)
    final_score: Mapped[float | None] = mapped_column(Float)
    """asr × coefficient (SPEC §4); None when nothing was judged."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (
        UniqueConstraint("job_id", "validator_hotkey", name="uq_submission_results_job_validator"),
        Index("ix_submission_results_submission", "submission_id"),
    )


class ProblemResult(Base):
    """One problem of one validator's evaluation (append-only)."""

    __tablename__ = PROBLEM_RESULTS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    result_id: Mapped[int] = mapped_column(
        RowId, ForeignKey(f"{SUBMISSION_RESULTS}.id", name="fk_problem_results_result"), nullable=False
    )
    problem_id: Mapped[str] = mapped_column(String(128), nullable=False)
    bucket: Mapped[str | None] = mapped_column(String(32))
    success: Mapped[bool] = mapped_column(Boolean, nullable=False)
    rule_score: Mapped[float | None] = mapped_column(Float)
    judge_quality: Mapped[float | None] = mapped_column(Float)
    judge_gate: Mapped[str | None] = mapped_column(String(64))
    end_reason: Mapped[str | None] = mapped_column(String(64))
    steps_used: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    """Why the agent produced nothing scoreable (crash, timeout, sandbox refusal), when it did not."""
    record_id: Mapped[str | None] = mapped_column(String(64))
    """The canonical trajectory record in the store's `evaluations`."""

    __table_args__ = (UniqueConstraint("result_id", "problem_id", name="uq_problem_results_result_problem"),)


class AuditEntry(Base):
    """One request to a signed endpoint (append-only): every refusal, and every accepted mutation.

    For a refused request this row is all that is kept; claimed values are cut to their column sizes."""

    __tablename__ = AUDIT

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    method: Mapped[str] = mapped_column(String(16), nullable=False)
    path: Mapped[str] = mapped_column(String(256), nullable=False)
    remote: Mapped[str | None] = mapped_column(String(64))
    hotkey: Mapped[str | None] = mapped_column(String(HOTKEY_LENGTH))
    """As claimed by the request (verified only when `status` is not 401)."""
    nonce: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer, nullable=False)
    reason: Mapped[str] = mapped_column(String(32), nullable=False)
    """`ok`, a 401 reason (skew, replay, signature, unknown_hotkey, wrong_role, bad_headers) or what
    else refused it (too_large, bad_body, cooldown, rejected)."""
    detail: Mapped[str | None] = mapped_column(String(512))
    submission_id: Mapped[str | None] = mapped_column(String(SUBMISSION_ID_LENGTH))

    __table_args__ = (
        Index("ix_audit_created", "created_at"),
        Index("ix_audit_hotkey", "hotkey"),
    )


class Job(Base):
    """One job: a submission evaluated on the arena's problem bank under fixed settings (append-only,
    written at its first claim). Its id is a hash of what it evaluates, so every validator's claim on
    the same evaluation names the same job."""

    __tablename__ = JOBS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    submission_id: Mapped[str] = mapped_column(
        String(SUBMISSION_ID_LENGTH),
        ForeignKey(f"{SUBMISSIONS}.submission_id", name="fk_jobs_submission"),
        nullable=False,
    )
    problems_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    catalog_fingerprint: Mapped[str] = mapped_column(String(512), nullable=False)
    suite: Mapped[str | None] = mapped_column(String(128))
    suite_version: Mapped[str | None] = mapped_column(String(128))
    scoring_pipeline_version: Mapped[str] = mapped_column(String(64), nullable=False)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    """How every problem is run and scored (`EvaluationSettings`)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_jobs_submission", "submission_id"),)


class JobLease(Base):
    """A validator's claim on a job (append-only). It lives until `expires_at` or its newest heartbeat's
    expiry, unless a `lease_events` row ended it (completed, released, lapsed)."""

    __tablename__ = JOB_LEASES

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    lease_id: Mapped[str] = mapped_column(String(SUBMISSION_ID_LENGTH), unique=True, nullable=False)
    job_id: Mapped[str] = mapped_column(
        String(64), ForeignKey(f"{JOBS}.job_id", name="fk_job_leases_job"), nullable=False
    )
    submission_id: Mapped[str] = mapped_column(String(SUBMISSION_ID_LENGTH), nullable=False)
    validator_hotkey: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), nullable=False)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_job_leases_job", "job_id"),)


class LeaseEvent(Base):
    """A heartbeat (with the expiry it extends the lease to) or the end of a lease (append-only)."""

    __tablename__ = LEASE_EVENTS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    lease_id: Mapped[str] = mapped_column(
        String(SUBMISSION_ID_LENGTH),
        ForeignKey(f"{JOB_LEASES}.lease_id", name="fk_lease_events_lease"),
        nullable=False,
    )
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    """`heartbeat`, or how the lease ended: `completed` (its result was stored), `released` (the
    validator gave the job back), `lapsed` (no heartbeat in time)."""
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_lease_events_lease", "lease_id", "kind"),)
