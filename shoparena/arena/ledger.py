"""Submissions, their status events and validators' results: the arena's append-only ledger.

A submission row is written once, when the file arrives (admitted or rejected, with its violations and
the cooldown it starts). Everything that happens to it later is a new row: a status event (queued →
running → scored | failed; a lapsed lease back to queued; scored on the arena's bank back to queued
once the competition starts, for its qualifying run), or a validator's result with one row per
problem. The status is the newest event, so nothing is ever updated in place.

The job layer builds on `SubmissionLedger`: `by_status("queued")` to find work, `add_event` for
claims, lapses and failures, `add_result` for a finished evaluation (idempotent per (job, validator)).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, func, insert, select

from shoparena.admission import Violation
from shoparena.arena.canonical import result_scores
from shoparena.arena.db import writing
from shoparena.arena.errors import ArenaError, ResultConflictError, UnknownSubmissionError
from shoparena.arena.models import (
    STATUSES,
    ProblemResultView,
    ResultIn,
    ResultView,
    SubmissionEvent,
    SubmissionStatus,
    SubmissionSummary,
    SubmissionView,
)
from shoparena.arena.tables import PROBLEM_RESULTS, SUBMISSION_EVENTS, SUBMISSION_RESULTS, SUBMISSIONS
from shoparena.problems.canonical import canonical_json

ARENA_ACTOR = "arena"
TERMINAL = frozenset({"rejected"})
"""No event follows a rejection: a rejected file is never evaluated."""


class CooldownPolicy(BaseModel):
    """How long a submission bars its hotkey (SPEC §6: one per 12 h; a security rejection a shorter
    wait, an integrity one — hard-coded answers — the full one).

    A format-only rejection (not UTF-8, does not parse, no `agent_main`) is an honest slip that
    reveals nothing about the security rules, so it costs only a few minutes: enough to stop a flood,
    short enough to fix a typo and resubmit."""

    full_s: int = 12 * 3600
    security_s: int = 3600
    format_s: int = 300

    def for_violations(self, violations: Sequence[Violation]) -> int:
        kinds = {violation.kind for violation in violations}
        if not violations or "integrity" in kinds:
            return self.full_s
        if "security" in kinds:
            return self.security_s
        return self.format_s


class Cooldown(BaseModel):
    submission_id: str
    """The submission that started it."""
    until: datetime
    retry_after_s: int


class CooldownActive(ArenaError):
    def __init__(self, cooldown: Cooldown):
        super().__init__(
            f"one submission per cooldown: the next is allowed in {cooldown.retry_after_s} s "
            f"(at {cooldown.until.isoformat(timespec='seconds')})"
        )
        self.cooldown = cooldown


def new_submission_id() -> str:
    return uuid.uuid4().hex


def _event(row) -> SubmissionEvent:
    return SubmissionEvent(
        status=row.status, actor=row.actor, job_id=row.job_id, detail=row.detail, at=row.created_at
    )


def _append_event(connection: Connection, submission_id: str, event: SubmissionEvent) -> None:
    connection.execute(
        insert(SUBMISSION_EVENTS).values(
            submission_id=submission_id,
            status=event.status,
            actor=event.actor,
            job_id=event.job_id,
            detail=event.detail,
            created_at=event.at,
        )
    )


def latest_events():
    """(submission_id, id of its newest event): a submission's status is the event row it names."""
    return (
        select(SUBMISSION_EVENTS.c.submission_id, func.max(SUBMISSION_EVENTS.c.id).label("event_id"))
        .group_by(SUBMISSION_EVENTS.c.submission_id)
        .subquery()
    )


def _content_sha256(result: ResultIn) -> str:
    return hashlib.sha256(canonical_json(result.model_dump(mode="json"))).hexdigest()


class SubmissionLedger:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.new_id: Callable[[], str] = new_submission_id
        """Where submission ids come from (random); a simulated season gives a seeded source."""

    # -- submissions ---------------------------------------------------------------------------------

    def cooldown(self, hotkey: str, now: datetime, connection: Connection | None = None) -> Cooldown | None:
        """The cooldown `hotkey` is in at `now`, if any. A submission is only accepted outside every
        earlier one's cooldown, so the newest submission's is the one that counts."""
        query = (
            select(SUBMISSIONS.c.submission_id, SUBMISSIONS.c.created_at, SUBMISSIONS.c.cooldown_s)
            .where(SUBMISSIONS.c.miner_hotkey == hotkey)
            .order_by(SUBMISSIONS.c.id.desc())
            .limit(1)
        )
        if connection is None:
            with self.engine.connect() as own:
                row = own.execute(query).first()
        else:
            row = connection.execute(query).first()
        if row is None:
            return None
        until = row.created_at + timedelta(seconds=row.cooldown_s)
        if until <= now:
            return None
        wait = (until - now).total_seconds()
        return Cooldown(
            submission_id=row.submission_id, until=until, retry_after_s=max(1, int(-(-wait // 1)))
        )

    def record(
        self,
        *,
        hotkey: str,
        name: str,
        code_sha256: str,
        code_size: int,
        violations: Sequence[Violation],
        cooldown_s: int,
        now: datetime,
    ) -> str:
        """Append a submission and its first event (queued, or rejected); returns its id. Raises
        CooldownActive when the hotkey is inside a cooldown — checked under the write lock, so of two
        concurrent submissions from one hotkey exactly one is recorded."""
        submission_id = self.new_id()
        admitted = not violations
        with writing(self.engine) as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    select(func.pg_advisory_xact_lock(func.hashtextextended(f"submit:{hotkey}", 0)))
                )
            active = self.cooldown(hotkey, now, connection)
            if active is not None:
                raise CooldownActive(active)
            connection.execute(
                insert(SUBMISSIONS).values(
                    submission_id=submission_id,
                    miner_hotkey=hotkey,
                    name=name,
                    code_sha256=code_sha256,
                    code_size=code_size,
                    admitted=admitted,
                    violations=[violation.model_dump() for violation in violations],
                    cooldown_s=cooldown_s,
                    created_at=now,
                )
            )
            event = SubmissionEvent(
                status="queued" if admitted else "rejected",
                actor=ARENA_ACTOR,
                detail=None if admitted else f"{len(violations)} admission violation(s)",
                at=now,
            )
            _append_event(connection, submission_id, event)
        return submission_id

    def get(self, submission_id: str) -> SubmissionView | None:
        """The submission with its events (one query: it is what every status read costs) and, once
        one was posted, its results."""
        query = (
            select(
                SUBMISSIONS.c.miner_hotkey,
                SUBMISSIONS.c.name,
                SUBMISSIONS.c.code_sha256,
                SUBMISSIONS.c.code_size,
                SUBMISSIONS.c.violations,
                SUBMISSIONS.c.created_at.label("submitted_at"),
                SUBMISSION_EVENTS.c.status,
                SUBMISSION_EVENTS.c.actor,
                SUBMISSION_EVENTS.c.job_id,
                SUBMISSION_EVENTS.c.detail,
                SUBMISSION_EVENTS.c.created_at,
            )
            .join(SUBMISSION_EVENTS, SUBMISSION_EVENTS.c.submission_id == SUBMISSIONS.c.submission_id)
            .where(SUBMISSIONS.c.submission_id == submission_id)
            .order_by(SUBMISSION_EVENTS.c.id)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
            if not rows:
                return None
            scored = any(row.status == "scored" for row in rows)
            results = self._results(connection, submission_id) if scored else []
        first, events = rows[0], [_event(row) for row in rows]
        return SubmissionView(
            submission_id=submission_id,
            miner_hotkey=first.miner_hotkey,
            name=first.name,
            code_sha256=first.code_sha256,
            code_size=first.code_size,
            submitted_at=first.submitted_at,
            status=events[-1].status,
            status_at=events[-1].at,
            violations=[Violation.model_validate(v) for v in first.violations],
            events=events,
            results=results,
        )

    def _summaries(self, where, order, limit: int) -> list[SubmissionSummary]:
        latest = latest_events()
        query = (
            select(
                SUBMISSIONS.c.submission_id,
                SUBMISSIONS.c.name,
                SUBMISSIONS.c.code_sha256,
                SUBMISSIONS.c.created_at.label("submitted_at"),
                SUBMISSION_EVENTS.c.status,
            )
            .join(latest, latest.c.submission_id == SUBMISSIONS.c.submission_id)
            .join(SUBMISSION_EVENTS, SUBMISSION_EVENTS.c.id == latest.c.event_id)
            .where(where)
            .order_by(order)
            .limit(limit)
        )
        with self.engine.connect() as connection:
            return [SubmissionSummary(**row._asdict()) for row in connection.execute(query)]

    def list_for(self, hotkey: str, limit: int = 50) -> list[SubmissionSummary]:
        """The hotkey's submissions, newest first, with their current status."""
        return self._summaries(SUBMISSIONS.c.miner_hotkey == hotkey, SUBMISSIONS.c.id.desc(), limit)

    def by_status(self, status: SubmissionStatus, limit: int = 100) -> list[SubmissionSummary]:
        """Submissions whose current status is `status`, oldest first (the job layer's queue)."""
        if status not in STATUSES:
            raise ArenaError(f"unknown status {status!r}; one of {', '.join(STATUSES)}")
        return self._summaries(SUBMISSION_EVENTS.c.status == status, SUBMISSIONS.c.id, limit)

    # -- status events -------------------------------------------------------------------------------

    def _current(self, connection: Connection, submission_id: str) -> str:
        status = connection.execute(
            select(SUBMISSION_EVENTS.c.status)
            .where(SUBMISSION_EVENTS.c.submission_id == submission_id)
            .order_by(SUBMISSION_EVENTS.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()
        if status is None:
            raise UnknownSubmissionError(f"submission {submission_id} is not in this arena")
        return status

    def status_within(self, connection: Connection, submission_id: str) -> str:
        """The current status, read inside the caller's transaction (the job layer's)."""
        return self._current(connection, submission_id)

    def event_within(self, connection: Connection, submission_id: str, event: SubmissionEvent) -> None:
        """Append a status event inside the caller's transaction (a claim, a lapse), which has checked
        the current status itself."""
        if event.status == "rejected":
            raise ArenaError("`rejected` is only ever a submission's first event")
        _append_event(connection, submission_id, event)

    def add_event(
        self,
        submission_id: str,
        status: SubmissionStatus,
        *,
        actor: str = ARENA_ACTOR,
        job_id: str | None = None,
        detail: str | None = None,
        now: datetime | None = None,
    ) -> SubmissionEvent:
        """Append a status change. `rejected` is only ever the first event, and nothing follows it."""
        if status not in STATUSES or status == "rejected":
            raise ArenaError(f"status {status!r} cannot be appended; one of queued, running, scored, failed")
        now = now or datetime.now(UTC)
        with writing(self.engine) as connection:
            current = self._current(connection, submission_id)
            if current in TERMINAL:
                raise ArenaError(
                    f"submission {submission_id} was rejected at admission; it is never evaluated"
                )
            event = SubmissionEvent(status=status, actor=actor, job_id=job_id, detail=detail, at=now)
            _append_event(connection, submission_id, event)
        return event

    # -- results -------------------------------------------------------------------------------------

    def add_result(
        self,
        result: ResultIn,
        now: datetime | None = None,
        *,
        within: Callable[[Connection], None] | None = None,
    ) -> tuple[ResultView, bool]:
        """Append a validator's evaluation and a `scored` event; (view, True) when new. Posting the same
        result again for its (job, validator) returns the stored one and (view, False); a different one
        raises ResultConflictError. The aggregates are computed here from the per-problem rows.

        `within(connection)` runs in the same transaction when the result is new (the job layer checks
        the lease and stores the trajectory records there); whatever it raises rolls everything back."""
        now = now or datetime.now(UTC)
        digest = _content_sha256(result)
        problems = result.problems
        values = {
            "submission_id": result.submission_id,
            "job_id": result.job_id,
            "validator_hotkey": result.validator_hotkey,
            "content_sha256": digest,
            "suite": result.suite,
            "suite_version": result.suite_version,
            "scoring_pipeline_version": result.scoring_pipeline_version,
            **result_scores(problems).model_dump(),
            "created_at": now,
        }
        with writing(self.engine) as connection:
            stored = connection.execute(
                select(SUBMISSION_RESULTS.c.content_sha256).where(
                    SUBMISSION_RESULTS.c.job_id == result.job_id,
                    SUBMISSION_RESULTS.c.validator_hotkey == result.validator_hotkey,
                )
            ).first()
            if stored is not None:
                if stored.content_sha256 != digest:
                    raise ResultConflictError(
                        f"job {result.job_id}: validator {result.validator_hotkey} posted a different result "
                        "before; results are append-only and one per (job, validator)"
                    )
            else:
                current = self._current(connection, result.submission_id)
                if current in TERMINAL:
                    raise ArenaError(
                        f"submission {result.submission_id} was rejected at admission; no results"
                    )
                result_id = connection.execute(
                    insert(SUBMISSION_RESULTS).values(**values).returning(SUBMISSION_RESULTS.c.id)
                ).scalar_one()
                connection.execute(
                    insert(PROBLEM_RESULTS), [{"result_id": result_id, **p.model_dump()} for p in problems]
                )
                scored = SubmissionEvent(
                    status="scored", actor=result.validator_hotkey, job_id=result.job_id, at=now
                )
                _append_event(connection, result.submission_id, scored)
                if within is not None:
                    within(connection)
            views = self._results(connection, result.submission_id)
        view = next(
            v for v in views if v.job_id == result.job_id and v.validator_hotkey == result.validator_hotkey
        )
        return view, stored is None

    def _results(self, connection: Connection, submission_id: str) -> list[ResultView]:
        rows = connection.execute(
            select(SUBMISSION_RESULTS)
            .where(SUBMISSION_RESULTS.c.submission_id == submission_id)
            .order_by(SUBMISSION_RESULTS.c.id)
        ).all()
        if not rows:
            return []
        per_problem: dict[int, list[ProblemResultView]] = {row.id: [] for row in rows}
        fields = list(ProblemResultView.model_fields)
        for problem in connection.execute(
            select(PROBLEM_RESULTS)
            .where(PROBLEM_RESULTS.c.result_id.in_(list(per_problem)))
            .order_by(PROBLEM_RESULTS.c.id)
        ):
            per_problem[problem.result_id].append(
                ProblemResultView(**{name: getattr(problem, name) for name in fields})
            )
        return [
            ResultView(
                job_id=row.job_id,
                validator_hotkey=row.validator_hotkey,
                suite=row.suite,
                suite_version=row.suite_version,
                scoring_pipeline_version=row.scoring_pipeline_version,
                problems=row.problems,
                successes=row.successes,
                asr=row.asr,
                mean_rule_score=row.mean_rule_score,
                judge_quality=row.judge_quality,
                coefficient=row.coefficient,
                final_score=row.final_score,
                at=row.created_at,
                per_problem=per_problem[row.id],
            )
            for row in rows
        ]
