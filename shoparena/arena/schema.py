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
RACES = "races"
RACE_EVENTS = "race_events"
RACE_ENTRIES = "race_entries"
RACE_OUTCOMES = "race_outcomes"
WEIGHT_VECTORS = "weight_vectors"
COMPETITION_TABLES = (RACES, RACE_EVENTS, RACE_ENTRIES, RACE_OUTCOMES, WEIGHT_VECTORS)
APPEND_ONLY_TABLES = (
    SUBMISSIONS,
    SUBMISSION_EVENTS,
    SUBMISSION_RESULTS,
    PROBLEM_RESULTS,
    AUDIT,
    JOBS,
    JOB_LEASES,
    LEASE_EVENTS,
    *COMPETITION_TABLES,
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
    kind: Mapped[str | None] = mapped_column(String(16))
    """None (the arena's whole problem bank, the first job layer's only kind), `qualifying` (a new
    submission on problems of the open partition) or `race` (a racer on a race's drawn problems)."""
    race_id: Mapped[str | None] = mapped_column(String(40))
    problem_ids: Mapped[list[str] | None] = mapped_column(JSON)
    """The job's problems of the race bank, in order (None: the arena's whole problem bank)."""

    __table_args__ = (
        Index("ix_jobs_submission", "submission_id"),
        Index("ix_jobs_race", "race_id"),
    )


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


# -- the competition (SPEC §6): races and their state changes, racers, outcomes, weights ----------------


class Race(Base):
    """One race as opened (append-only): the seed stays here, unpublished, until the race closes; the
    commitment is public from the start. Its state is its newest `race_events` row."""

    __tablename__ = RACES

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    race_id: Mapped[str] = mapped_column(String(40), unique=True, nullable=False)
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    """When qualifying ends and the race starts (`tick` starts it then)."""
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    """When the race closes with whatever results came in."""
    rotation_period: Mapped[int] = mapped_column(Integer, nullable=False)
    rotation_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    rotation: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    """The frozen rotation manifest the problems were drawn from (what race-problems recomputes on)."""
    seed: Mapped[str] = mapped_column(String(128), nullable=False)
    """Secret until the race closes (never served before its outcome row exists)."""
    seed_commitment: Mapped[str] = mapped_column(String(64), nullable=False)
    problem_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    race_clusters: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    open_clusters: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    incumbent_before: Mapped[str | None] = mapped_column(String(HOTKEY_LENGTH))
    bank_sha256: Mapped[str] = mapped_column(String(64), nullable=False)


class RaceEvent(Base):
    """A state change of a race (append-only): QUALIFYING_OPEN, RACE_RUNNING, RACE_COMPLETE, CANCELLED."""

    __tablename__ = RACE_EVENTS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    race_id: Mapped[str] = mapped_column(
        String(40), ForeignKey(f"{RACES}.race_id", name="fk_race_events_race"), nullable=False
    )
    state: Mapped[str] = mapped_column(String(20), nullable=False)
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_race_events_race", "race_id", "id"),)


class RaceEntry(Base):
    """A racer, fixed when the race starts (append-only): a hotkey's latest qualified submission and
    the race job every validator evaluates it under."""

    __tablename__ = RACE_ENTRIES

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    race_id: Mapped[str] = mapped_column(
        String(40), ForeignKey(f"{RACES}.race_id", name="fk_race_entries_race"), nullable=False
    )
    hotkey: Mapped[str] = mapped_column(String(HOTKEY_LENGTH), nullable=False)
    submission_id: Mapped[str] = mapped_column(String(SUBMISSION_ID_LENGTH), nullable=False)
    job_id: Mapped[str] = mapped_column(String(64), nullable=False)
    qualifying_score: Mapped[float] = mapped_column(Float, nullable=False)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (UniqueConstraint("race_id", "hotkey", name="uq_race_entries_race_hotkey"),)


class RaceOutcome(Base):
    """How a race ended (append-only, one per race): the revealed seed, the ranked results, the crown
    and the embargo, or why it was cancelled. `race` is the whole `competition.models.Race` as served."""

    __tablename__ = RACE_OUTCOMES

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    race_id: Mapped[str] = mapped_column(
        String(40), ForeignKey(f"{RACES}.race_id", name="fk_race_outcomes_race"), unique=True, nullable=False
    )
    state: Mapped[str] = mapped_column(String(20), nullable=False)
    winner: Mapped[str | None] = mapped_column(String(HOTKEY_LENGTH))
    winner_submission_id: Mapped[str | None] = mapped_column(String(SUBMISSION_ID_LENGTH))
    promoted: Mapped[bool] = mapped_column(Boolean, nullable=False)
    code_release_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    race: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class WeightVectorRow(Base):
    """Weights computed at a race's close (append-only): each validator's own vector and the consensus."""

    __tablename__ = WEIGHT_VECTORS

    id: Mapped[int] = mapped_column(RowId, primary_key=True, autoincrement=True)
    race_id: Mapped[str | None] = mapped_column(String(40))
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    """`validator` (one validator's vector) or `consensus` (what is set on the chain)."""
    validator_hotkey: Mapped[str | None] = mapped_column(String(HOTKEY_LENGTH))
    uids: Mapped[list[int]] = mapped_column(JSON, nullable=False)
    weights: Mapped[list[float]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_weight_vectors_race", "race_id", "source"),)
