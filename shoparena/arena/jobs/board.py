"""The lease board, the job layer's arena side: validators claim jobs under leases, keep the leases
alive with heartbeats, give them back, and fetch the code they evaluate (SPEC §6).

A claim is a lease with a TTL (`jobs.lease_s`) that heartbeats extend. A lease nobody renews lapses: the
next claim sweeps first, records the lapse and puts the submission back in the queue, so a validator
killed mid-job loses nothing but its time. After `jobs.max_lapses` lapses without a result the
submission is `failed` (code that kills or hangs every validator must not hold the queue forever).

What a job evaluates is `specs`' (through the job source, once the competition is on), who is next is
`queue`'s, and a posted result is taken by `intake.ResultIntake`. Every write takes `leases.lock`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, func, insert, select

from shoparena.arena.arena import Arena
from shoparena.arena.db import writing
from shoparena.arena.errors import JobRefused
from shoparena.arena.jobs import queue
from shoparena.arena.jobs.inputs import Bank
from shoparena.arena.jobs.leases import (
    Lease,
    at,
    lease_event,
    lock,
    open_leases,
    own_lease,
    read_leases,
)
from shoparena.arena.jobs.source import JobSource
from shoparena.arena.jobs.specs import JobSpec, JobSpecs
from shoparena.arena.models import ArenaInfo, JobOffer, LeaseView, SubmissionEvent
from shoparena.arena.tables import JOB_LEASES, JOBS, LEASE_EVENTS, SUBMISSION_EVENTS, SUBMISSIONS
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION


class JobBoard:
    """Claims, heartbeats, releases and code for one opened arena (thread-safe). `source` says what the
    competition evaluates; without one every job is a bank job."""

    def __init__(self, arena: Arena, clock: Callable[[], float] = time.time, source: JobSource | None = None):
        self.arena = arena
        self.engine = arena.store.engine
        self.config = arena.config
        self.policy = arena.config.jobs
        self.settings = arena.config.evaluation
        self.ledger = arena.ledger
        self.clock = clock
        self.source = source
        self.specs = JobSpecs(arena.config, source)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def competition_on(self) -> bool:
        """New evaluations are qualifying runs (the job source says the competition is on)."""
        return self.source is not None and self.source.competition_on()

    def info(self) -> ArenaInfo:
        bank = self.specs.inputs.bank()
        return ArenaInfo(
            catalog_fingerprint=self.specs.inputs.fingerprint(),
            catalog_dir=self.config.catalog,
            problems_sha256=bank.sha256,
            problems_count=len(bank.problems),
            suite=bank.suite,
            suite_version=bank.suite_version,
            scoring_pipeline_version=SCORING_PIPELINE_VERSION,
            evaluation=self.settings,
            lease_s=self.policy.lease_s,
            heartbeat_s=self.policy.heartbeat_s,
        )

    # -- claiming ----------------------------------------------------------------------------------

    def wanted(self, connection: Connection, competition: bool) -> int:
        """Validators each evaluation needs: `validators_per_submission`, and under the competition at
        least its qualifying quorum (no single validator decides a qualifying score)."""
        wanted = self.policy.validators_per_submission
        if competition and self.source is not None:
            registered = sum(1 for n in self.arena.metagraph.all(connection) if n.role == "validator")
            wanted = max(wanted, self.source.qualifying_validators(registered))
        return wanted

    def candidates(
        self, connection: Connection, competition: bool, limit: int | None = queue.CANDIDATES_PER_CLAIM
    ):
        """`queue.candidates` under this arena's `wanted` validators per evaluation."""
        return queue.candidates(connection, self.wanted(connection, competition), competition, limit)

    def _pick(
        self,
        connection: Connection,
        hotkey: str,
        now: datetime,
        bank: Bank,
        fingerprint: str,
        source: JobSource | None,
    ):
        """(submission row, JobSpec) of the job this validator should take next, or None (see `queue`);
        `source` is the job source while the competition is on, else None (bank jobs)."""
        for job in queue.open_race_jobs(connection):
            if queue.has_room(connection, job.job_id, hotkey, now, cap=None):
                return job, self.specs.job_problems(job)
        if source is None:

            def spec_of(candidate) -> JobSpec:
                return self.specs.bank_spec(candidate.submission_id, bank, fingerprint)

        else:
            start = source.competition_start(now)

            def spec_of(candidate) -> JobSpec:
                submission_id = candidate.submission_id
                problem_ids = source.qualifying_problem_ids(submission_id, candidate.created_at, start)
                return self.specs.spec("qualifying", submission_id, problem_ids, fingerprint)

        wanted = self.wanted(connection, source is not None)
        for candidate in queue.candidates(connection, wanted, source is not None):
            spec = spec_of(candidate)
            if queue.has_room(connection, spec.job_id, hotkey, now, wanted):
                return candidate, spec
        return None

    def claim(self, hotkey: str) -> JobOffer | None:
        """The oldest job this validator may take, under a new lease; None when there is no work."""
        bank, fingerprint = self.specs.inputs.bank(), self.specs.inputs.fingerprint()
        now = self.now()
        expires = now + timedelta(seconds=self.policy.lease_s)
        lease_id = uuid.uuid4().hex
        with writing(self.engine) as connection:
            lock(connection)
            self._sweep(connection, now)
            source = self.source if self.competition_on() else None
            if source is not None:
                queue.queue_backlog(connection, self.ledger, now)
            chosen = self._pick(connection, hotkey, now, bank, fingerprint, source)
            if chosen is None:
                return None
            submission, spec = chosen
            job_id = spec.job_id
            self.specs.insert_job(connection, spec, submission.submission_id, fingerprint, now)
            connection.execute(
                insert(JOB_LEASES).values(
                    lease_id=lease_id,
                    job_id=job_id,
                    submission_id=submission.submission_id,
                    validator_hotkey=hotkey,
                    claimed_at=now,
                    expires_at=expires,
                )
            )
            if (
                spec.kind != "race"
                and self.ledger.status_within(connection, submission.submission_id) == "queued"
            ):
                running = SubmissionEvent(
                    status="running",
                    actor=hotkey,
                    job_id=job_id,
                    detail=f"claimed under lease {lease_id} until {at(expires)}",
                    at=now,
                )
                self.ledger.event_within(connection, submission.submission_id, running)
        return JobOffer(
            job_id=job_id,
            submission_id=submission.submission_id,
            miner_hotkey=submission.miner_hotkey,
            code_sha256=submission.code_sha256,
            suite=spec.suite,
            suite_version=spec.suite_version,
            scoring_pipeline_version=SCORING_PIPELINE_VERSION,
            lease_id=lease_id,
            lease_expires_at=expires,
            lease_s=self.policy.lease_s,
            heartbeat_s=self.policy.heartbeat_s,
            name=submission.name,
            code_size=submission.code_size,
            catalog_fingerprint=fingerprint,
            catalog_dir=self.config.catalog,
            problems_sha256=spec.problems_sha256,
            evaluation=self.settings,
            problems=[problem.to_record() for problem in spec.problems],
            kind=spec.kind,
            race_id=spec.race_id,
        )

    # -- leases ------------------------------------------------------------------------------------

    def heartbeat(self, hotkey: str, lease_id: str) -> LeaseView:
        """Extend a live lease by `lease_s` from now; a lease found run out lapses here and now."""
        now = self.now()
        with writing(self.engine) as connection:
            lock(connection)
            lease = own_lease(connection, lease_id, hotkey)
            if lease.ended is None and lease.expires_at <= now:
                self._end(
                    connection,
                    lease,
                    "lapsed",
                    now,
                    f"its heartbeat came after it ran out at {at(lease.expires_at)}",
                )
                lapsed = lease
            else:
                lapsed = None
                if lease.ended is None:
                    expires = now + timedelta(seconds=self.policy.lease_s)
                    lease_event(connection, lease, "heartbeat", now, expires_at=expires)
        if lapsed is not None:
            raise JobRefused(
                409,
                "lease_lapsed",
                f"lease {lease_id} ran out at {at(lapsed.expires_at)} without a heartbeat; its job went back to "
                "the queue — stop working on it",
            )
        if lease.ended is not None:
            raise JobRefused(409, "lease_ended", f"lease {lease_id} has ended ({lease.ended})")
        return LeaseView(lease_id=lease_id, job_id=lease.job_id, expires_at=expires)

    def release(self, hotkey: str, lease_id: str, reason: str) -> LeaseView:
        """Give a job back (the validator cannot evaluate it); it is claimable again at once."""
        now = self.now()
        with writing(self.engine) as connection:
            lock(connection)
            lease = own_lease(connection, lease_id, hotkey)
            if lease.ended is None:
                self._end(connection, lease, "released", now, reason)
        if lease.ended is not None:
            raise JobRefused(409, "lease_ended", f"lease {lease_id} has ended ({lease.ended})")
        return LeaseView(lease_id=lease_id, job_id=lease.job_id, expires_at=now, ended="released")

    def code(self, hotkey: str, lease_id: str) -> tuple[bytes, str]:
        """The submission's code for the holder of a live lease on its job (verified by the code store)."""
        now = self.now()
        with self.engine.connect() as connection:
            lease = own_lease(connection, lease_id, hotkey)
            sha256 = connection.execute(
                select(SUBMISSIONS.c.code_sha256).where(SUBMISSIONS.c.submission_id == lease.submission_id)
            ).scalar_one()
        if not lease.live(now):
            raise JobRefused(409, "lease_ended", f"lease {lease_id} is no longer live; claim a job again")
        return self.arena.code.get(sha256), sha256

    def _end(self, connection: Connection, lease: Lease, kind: str, now: datetime, detail: str) -> None:
        """End a lease; a lapsed or released one gives its job back when nobody else holds it."""
        lease_event(connection, lease, kind, now, detail=detail)
        if kind == "completed" or self.ledger.status_within(connection, lease.submission_id) != "running":
            return
        job_kind = connection.execute(
            select(JOBS.c.kind).where(JOBS.c.job_id == lease.job_id)
        ).scalar_one_or_none()
        if job_kind == "race":
            return  # a race job is claimable again at once; the submission's own status is not the race's
        if self._running_job(connection, lease.submission_id) != lease.job_id:
            return  # an old job's lease (a bank job before the competition): the running job is another
        others = read_leases(connection, JOB_LEASES.c.job_id == lease.job_id)
        if any(other.live(now) for other in others if other.lease_id != lease.lease_id):
            return
        lapses = connection.execute(
            select(func.count())
            .select_from(LEASE_EVENTS.join(JOB_LEASES, JOB_LEASES.c.lease_id == LEASE_EVENTS.c.lease_id))
            .where(JOB_LEASES.c.job_id == lease.job_id, LEASE_EVENTS.c.kind == "lapsed")
        ).scalar_one()
        why = f"lease {lease.lease_id} of validator {lease.validator_hotkey} {kind}: {detail}"
        if kind == "lapsed" and lapses >= self.policy.max_lapses:
            status, why = "failed", f"{why}; {lapses} lapsed leases without a result — no more attempts"
        else:
            status = "queued"
        event = SubmissionEvent(status=status, actor="arena", job_id=lease.job_id, detail=why, at=now)
        self.ledger.event_within(connection, lease.submission_id, event)

    @staticmethod
    def _running_job(connection: Connection, submission_id: str) -> str | None:
        """The job named by the submission's newest `running` event: the job its status is about."""
        return connection.execute(
            select(SUBMISSION_EVENTS.c.job_id)
            .where(
                SUBMISSION_EVENTS.c.submission_id == submission_id, SUBMISSION_EVENTS.c.status == "running"
            )
            .order_by(SUBMISSION_EVENTS.c.id.desc())
            .limit(1)
        ).scalar()

    def _sweep(self, connection: Connection, now: datetime) -> None:
        """Record every lease that ran out without a heartbeat (and requeue its job)."""
        for lease in open_leases(connection):
            if lease.expires_at <= now:
                self._end(
                    connection,
                    lease,
                    "lapsed",
                    now,
                    f"no heartbeat since it ran out at {at(lease.expires_at)}",
                )
