"""The job layer, on the arena's side: validators claim jobs under leases, keep the leases alive with
heartbeats, and post results, which land in the ledger and the trajectory store together (SPEC §6).

A job is one submission evaluated on the arena's problem bank, on its catalogue, under its evaluation
settings and scoring pipeline; its id is a hash of exactly that, so every validator evaluating the same
thing names the same job, and results are idempotent per (job, validator). A claim is a lease with a
TTL (`jobs.lease_s`) that heartbeats extend. A lease nobody renews lapses: the next claim sweeps first,
records the lapse and puts the submission back in the queue, so a validator killed mid-job loses
nothing but its time. After `jobs.max_lapses` lapses without a result the submission is `failed`
(code that kills or hangs every validator must not hold the queue forever).

Once the arena has a race bank, jobs are qualifying runs; a submission scored on the arena's bank before
that is queued again for its qualifying run by the next claim (`_queue_backlog`), if it is still its
hotkey's newest admitted one, and qualifies on the competition's first rotation (`qualifying_period`).

Every write of this layer runs under one lock — SQLite's write lock (and `db.writing`'s process lock),
a transaction-scoped advisory lock on PostgreSQL — so two validators never both get the last place on
a job, and a lapse and a result for the same lease never both happen.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import Connection, func, insert, or_, select

from shoparena.arena.arena import Arena
from shoparena.arena.canonical import outcome_problems, problem_outcome, record_problems
from shoparena.arena.db import writing
from shoparena.arena.errors import JobRefused, ResultConflictError
from shoparena.arena.ledger import latest_events
from shoparena.arena.models import (
    ArenaInfo,
    JobOffer,
    JobRef,
    LeaseView,
    ResultAccepted,
    ResultIn,
    ResultPost,
    SubmissionEvent,
)
from shoparena.arena.schema import (
    Job,
    JobLease,
    LeaseEvent,
    RaceEvent,
    RaceOutcome,
    Submission,
    SubmissionResult,
)
from shoparena.arena.schema import SubmissionEvent as EventRow
from shoparena.problems.canonical import canonical_json
from shoparena.problems.io import parse_problems
from shoparena.problems.models import Problem
from shoparena.records.trajectory import SCORING_PIPELINE_VERSION
from shoparena.store.errors import StoreError

JOBS = Job.__table__
LEASES = JobLease.__table__
LEASE_EVENTS = LeaseEvent.__table__
SUBMISSIONS = Submission.__table__
EVENTS = EventRow.__table__
RESULTS = SubmissionResult.__table__
RACE_EVENTS = RaceEvent.__table__
RACE_OUTCOMES = RaceOutcome.__table__
RACE_BANK_FILE = "race_bank.jsonl"
"""The competition's race bank in the arena directory; while it exists new submissions get qualifying
jobs on the open partition instead of the whole arena bank."""
LEASE_ENDS = ("completed", "released", "lapsed")
CANDIDATES_PER_CLAIM = 500
"""Submissions a claim looks at, oldest first (with one validator per submission the first fits)."""
SHOWN_PROBLEMS = 5


@dataclass(frozen=True)
class Lease:
    lease_id: str
    job_id: str
    submission_id: str
    validator_hotkey: str
    expires_at: datetime
    """The claim's expiry or its newest heartbeat's, whichever is later."""
    ended: str | None
    """completed, released or lapsed; None while the lease is open."""

    def live(self, now: datetime) -> bool:
        return self.ended is None and self.expires_at > now

    def view(self) -> LeaseView:
        return LeaseView(
            lease_id=self.lease_id, job_id=self.job_id, expires_at=self.expires_at, ended=self.ended
        )


@dataclass(frozen=True)
class Bank:
    """The arena's problem bank as read from its file, checked against the hash `arena init` kept."""

    problems: list[Problem]
    sha256: str
    suite: str | None
    suite_version: str | None
    stamp: tuple[int, int]


@dataclass(frozen=True)
class JobSpec:
    """What one job evaluates: its kind, its problems (with rewards) and how records name its suite."""

    job_id: str
    kind: str
    """bank, qualifying or race."""
    problems: list[Problem]
    problems_sha256: str
    suite: str | None
    suite_version: str | None
    race_id: str | None = None

    @property
    def problem_ids(self) -> list[str] | None:
        return None if self.kind == "bank" else [problem.problem_id or "" for problem in self.problems]


def problems_sha256(problems: Iterable[Problem]) -> str:
    """The hash of an explicit problem list (rewards included): what a qualifying or race job pins."""
    return hashlib.sha256(canonical_json([problem.to_record() for problem in problems])).hexdigest()


def _common(values: Iterable[str | None]) -> str | None:
    found = set(values)
    return found.pop() if len(found) == 1 else None


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


class JobBoard:
    """Claims, heartbeats, releases, code and results for one opened arena (thread-safe)."""

    def __init__(self, arena: Arena, clock: Callable[[], float] = time.time):
        self.arena = arena
        self.engine = arena.store.engine
        self.config = arena.config
        self.policy = arena.config.jobs
        self.settings = arena.config.evaluation
        self.ledger = arena.ledger
        self.clock = clock
        self._cache_lock = threading.Lock()
        self._bank: Bank | None = None
        self._race_bank = None
        self._race_bank_stamp: tuple[int, int] | None = None
        self._rotations: dict[int, object] = {}
        self._fingerprint: str | None = None

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    # -- what every job shares ----------------------------------------------------------------------

    def bank(self) -> Bank:
        """The problem bank, re-read when its file changes, refused when it is no longer the one the
        arena was made with (validators would score against other rewards)."""
        path = Path(self.config.problems)
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            with self._cache_lock:
                if self._bank is not None and self._bank.stamp == stamp:
                    return self._bank
            data = path.read_bytes()
        except OSError as exc:
            raise JobRefused(
                503,
                "bank_unavailable",
                f"the arena cannot read its problem bank {path}: {exc.strerror or exc}",
            ) from None
        sha256 = hashlib.sha256(data).hexdigest()
        if sha256 != self.config.problems_sha256:
            raise JobRefused(
                503,
                "bank_changed",
                f"the problem bank {path} changed since `arena init` (sha256 {sha256[:12]}…, the arena's "
                f"{self.config.problems_sha256[:12]}…); the operator must restore it or make a new arena",
            )
        problems = parse_problems(data, str(path), strict=True).problems
        bank = Bank(
            problems=problems,
            sha256=sha256,
            suite=self.settings.suite or _common(p.suite for p in problems) or path.stem,
            suite_version=self.settings.suite_version
            or _common(p.suite_version for p in problems)
            or sha256[:16],
            stamp=stamp,
        )
        with self._cache_lock:
            self._bank = bank
        return bank

    def fingerprint(self) -> str:
        """The arena's catalogue as `catalog_fingerprint` names it: validators must hold the same one."""
        with self._cache_lock:
            if self._fingerprint is not None:
                return self._fingerprint
        from shoparena.agents.base import RunnerError
        from shoparena.eval.runner import catalog_fingerprint

        try:
            fingerprint = catalog_fingerprint(Path(self.config.catalog))
        except RunnerError as exc:
            raise JobRefused(503, "catalog_unavailable", f"the arena's catalogue: {exc}") from None
        with self._cache_lock:
            self._fingerprint = fingerprint
        return fingerprint

    def info(self) -> ArenaInfo:
        bank = self.bank()
        return ArenaInfo(
            catalog_fingerprint=self.fingerprint(),
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

    def job_id(self, submission_id: str, bank: Bank, fingerprint: str) -> str:
        """A hash of what the job evaluates and how: the same evaluation is always the same job."""
        what = {
            "submission_id": submission_id,
            "problems_sha256": bank.sha256,
            "catalog": fingerprint,
            "scoring_pipeline_version": SCORING_PIPELINE_VERSION,
            "settings": self.settings.model_dump(mode="json"),
            "suite": [bank.suite, bank.suite_version],
        }
        return hashlib.sha256(canonical_json(what)).hexdigest()[:32]

    # -- the competition's job kinds -----------------------------------------------------------------

    def competition_on(self) -> bool:
        """The arena runs the competition once it has a race bank (`arena bank add`)."""
        return (Path(self.arena.dir) / RACE_BANK_FILE).exists()

    def race_bank(self):
        """The race bank (`competition.bank.RaceBank`), re-read when its file changes."""
        from shoparena.arena.competition.bank import read_bank

        path = Path(self.arena.dir) / RACE_BANK_FILE
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        with self._cache_lock:
            if self._race_bank is not None and stamp is not None and self._race_bank_stamp == stamp:
                return self._race_bank
        bank = read_bank(Path(self.arena.dir))
        with self._cache_lock:
            self._race_bank, self._race_bank_stamp = bank, stamp
        return bank

    def spec(
        self,
        kind: str,
        submission_id: str,
        problem_ids: list[str],
        fingerprint: str,
        race_id: str | None = None,
    ) -> JobSpec:
        """A qualifying or race job on `problem_ids` of the race bank; its id hashes all of it."""
        by_id = self.race_bank().by_id
        missing = [problem_id for problem_id in problem_ids if problem_id not in by_id]
        if missing:
            raise JobRefused(
                409,
                "bank_changed",
                f"{kind} job of submission {submission_id}: problem(s) {', '.join(missing[:5])} are not in "
                "the race bank any more",
            )
        problems = [by_id[problem_id] for problem_id in problem_ids]
        digest = problems_sha256(problems)
        suite = self.settings.suite or _common(p.suite for p in problems) or "race_bank"
        version = self.settings.suite_version or _common(p.suite_version for p in problems) or digest[:16]
        what = {
            "kind": kind,
            "race_id": race_id,
            "submission_id": submission_id,
            "problems_sha256": digest,
            "catalog": fingerprint,
            "scoring_pipeline_version": SCORING_PIPELINE_VERSION,
            "settings": self.settings.model_dump(mode="json"),
            "suite": [suite, version],
        }
        return JobSpec(
            job_id=hashlib.sha256(canonical_json(what)).hexdigest()[:32],
            kind=kind,
            problems=problems,
            problems_sha256=digest,
            suite=suite,
            suite_version=version,
            race_id=race_id,
        )

    def competition_start(self, now: datetime) -> int:
        """The competition's first rotation period: the lowest period frozen in `ARENA/rotations/`, else
        (no draw was ever made) the period in force `now`, which the first qualifying or race draw
        freezes. The arena never freezes a period below it later — qualifying draws use this period or a
        later one, races the period of their own `now` — so once frozen it does not change."""
        from shoparena.arena.competition.pools import frozen_periods, period_of

        periods = frozen_periods(Path(self.arena.dir))
        return periods[0] if periods else period_of(self.config, now)[0]

    def qualifying_period(self, submitted_at: datetime, start: int) -> int:
        """The rotation period a submission qualifies on: the one in force when it was submitted, or the
        competition's first period (`start`, see `competition_start`) when it was submitted before that.

        A submission from before the competition (the arena had no race bank yet: it was evaluated on
        the arena's own bank, or it waited in the queue) is treated as if it had been submitted when the
        competition started, so it qualifies on what a submission made then qualifies on. Not on the
        period of its submission time:
        - that period had no rotation; making one now would freeze, after the fact, a partition of
          today's bank for a period that never had a bank, possibly many periods back;
        - the miner chose its submission time, so it would choose a partition nobody submitting under
          the competition can get (submitting before the bank must buy nothing).
        Not on the period in force when a validator first claims it either: claims happen at any time,
        and a retry or a second validator in a later period would get another job. `start` is durable
        and public (a frozen manifest: first writer wins, never rewritten), so the period, hence the
        job id, is the same for every validator and every retry, whenever they claim.

        A submission made under the competition keeps its own period, except when nothing was drawn
        (no claim, no race) in the period the race bank arrived in: the bank's file holds no time, so
        the first frozen period stands for its arrival, and such a submission qualifies on that one."""
        from shoparena.arena.competition.pools import period_of

        return max(period_of(self.config, submitted_at)[0], start)

    def qualifying_spec(
        self, submission_id: str, submitted_at: datetime, fingerprint: str, start: int | None = None
    ) -> JobSpec:
        """A submission's qualifying job: problems of the open partition of the rotation of its
        `qualifying_period` (`start`: the competition's first period, `competition_start` when None),
        drawn from its id, so every validator and every retry gets the same."""
        from shoparena.arena.competition.pools import period_starts_at, qualifying_problems, rotation_at

        if start is None:
            start = self.competition_start(self.now())
        period = self.qualifying_period(submitted_at, start)
        with self._cache_lock:
            manifest = self._rotations.get(period)
        if manifest is None:
            manifest = rotation_at(Path(self.arena.dir), self.config, period_starts_at(self.config, period))
            with self._cache_lock:
                self._rotations[period] = manifest  # frozen once written: safe to keep
        problem_ids = qualifying_problems(
            manifest, self.race_bank(), submission_id, self.config.competition.qualifying_problems
        )
        if not problem_ids:
            raise JobRefused(
                503,
                "no_open_problems",
                f"rotation period {manifest.period} has no open problems to qualify on; grow the race bank "
                "(`shoparena arena bank add`)",
            )
        return self.spec("qualifying", submission_id, problem_ids, fingerprint)

    def bank_spec(self, submission_id: str, bank: Bank, fingerprint: str) -> JobSpec:
        return JobSpec(
            job_id=self.job_id(submission_id, bank, fingerprint),
            kind="bank",
            problems=bank.problems,
            problems_sha256=bank.sha256,
            suite=bank.suite,
            suite_version=bank.suite_version,
        )

    def job_problems(self, job) -> JobSpec:
        """A stored job's problems, checked to be the ones it was made on."""
        if job.kind in (None, "bank"):
            bank = self.bank()
            if job.problems_sha256 != bank.sha256:
                raise JobRefused(409, "bank_changed", f"job {job.job_id} was made on another problem bank")
            return JobSpec(job.job_id, "bank", bank.problems, bank.sha256, job.suite, job.suite_version)
        by_id = self.race_bank().by_id
        problems = [by_id.get(problem_id) for problem_id in job.problem_ids or []]
        if any(problem is None for problem in problems) or problems_sha256(problems) != job.problems_sha256:
            raise JobRefused(409, "bank_changed", f"job {job.job_id}'s problems changed in the race bank")
        return JobSpec(
            job.job_id, job.kind, problems, job.problems_sha256, job.suite, job.suite_version, job.race_id
        )

    def insert_job(self, connection: Connection, spec: JobSpec, submission_id: str, fingerprint: str, now):
        """Write a job's row unless it exists (the first claim of a job, or the race engine at start)."""
        known = connection.execute(select(JOBS.c.id).where(JOBS.c.job_id == spec.job_id)).first()
        if known is not None:
            return
        connection.execute(
            insert(JOBS).values(
                job_id=spec.job_id,
                submission_id=submission_id,
                problems_sha256=spec.problems_sha256,
                catalog_fingerprint=fingerprint,
                suite=spec.suite,
                suite_version=spec.suite_version,
                scoring_pipeline_version=SCORING_PIPELINE_VERSION,
                settings=self.settings.model_dump(mode="json"),
                created_at=now,
                kind=None if spec.kind == "bank" else spec.kind,
                race_id=spec.race_id,
                problem_ids=spec.problem_ids,
            )
        )

    @staticmethod
    def _job_kind(connection: Connection, job_id: str) -> str | None:
        return connection.execute(select(JOBS.c.kind).where(JOBS.c.job_id == job_id)).scalar_one_or_none()

    def _open_race_jobs(self, connection: Connection):
        """Race jobs of races that are running and not closed, oldest race and racer first."""
        running = select(RACE_EVENTS.c.race_id).where(RACE_EVENTS.c.state == "RACE_RUNNING")
        closed = select(RACE_OUTCOMES.c.race_id)
        query = (
            select(
                JOBS,
                SUBMISSIONS.c.miner_hotkey,
                SUBMISSIONS.c.name,
                SUBMISSIONS.c.code_sha256,
                SUBMISSIONS.c.code_size,
            )
            .join(SUBMISSIONS, SUBMISSIONS.c.submission_id == JOBS.c.submission_id)
            .where(JOBS.c.kind == "race", JOBS.c.race_id.in_(running), JOBS.c.race_id.not_in(closed))
            .order_by(JOBS.c.id)
        )
        return connection.execute(query).all()

    # -- leases ------------------------------------------------------------------------------------

    @staticmethod
    def _lock(connection: Connection) -> None:
        if connection.dialect.name == "postgresql":
            connection.execute(select(func.pg_advisory_xact_lock(func.hashtextextended("arena:jobs", 0))))

    @staticmethod
    def leases(connection: Connection, condition) -> list[Lease]:
        """The leases `condition` selects, each with its newest heartbeat's expiry and how it ended."""
        rows = connection.execute(select(LEASES).where(condition).order_by(LEASES.c.id)).all()
        if not rows:
            return []
        ids = [row.lease_id for row in rows]
        beats = dict(
            connection.execute(
                select(LEASE_EVENTS.c.lease_id, func.max(LEASE_EVENTS.c.expires_at))
                .where(LEASE_EVENTS.c.lease_id.in_(ids), LEASE_EVENTS.c.kind == "heartbeat")
                .group_by(LEASE_EVENTS.c.lease_id)
            ).all()
        )
        ends = dict(
            connection.execute(
                select(LEASE_EVENTS.c.lease_id, LEASE_EVENTS.c.kind).where(
                    LEASE_EVENTS.c.lease_id.in_(ids), LEASE_EVENTS.c.kind.in_(LEASE_ENDS)
                )
            ).all()
        )
        leases = []
        for row in rows:
            beat = beats.get(row.lease_id)
            expires = max(row.expires_at, beat) if beat is not None else row.expires_at
            leases.append(
                Lease(
                    lease_id=row.lease_id,
                    job_id=row.job_id,
                    submission_id=row.submission_id,
                    validator_hotkey=row.validator_hotkey,
                    expires_at=expires,
                    ended=ends.get(row.lease_id),
                )
            )
        return leases

    def _own_lease(self, connection: Connection, lease_id: str, hotkey: str) -> Lease:
        found = self.leases(connection, LEASES.c.lease_id == lease_id)
        if not found:
            raise JobRefused(404, "no_such_lease", f"no lease {lease_id} in this arena")
        lease = found[0]
        if lease.validator_hotkey != hotkey:
            raise JobRefused(403, "not_your_lease", f"lease {lease_id} belongs to another validator")
        return lease

    def _event(self, connection: Connection, lease: Lease, kind: str, now: datetime, **values) -> None:
        connection.execute(
            insert(LEASE_EVENTS).values(lease_id=lease.lease_id, kind=kind, created_at=now, **values)
        )

    def _end(self, connection: Connection, lease: Lease, kind: str, now: datetime, detail: str) -> None:
        """End a lease; a lapsed or released one gives its job back when nobody else holds it."""
        self._event(connection, lease, kind, now, detail=detail)
        if kind == "completed" or self.ledger.status_within(connection, lease.submission_id) != "running":
            return
        if self._job_kind(connection, lease.job_id) == "race":
            return  # a race job is claimable again at once; the submission's own status is not the race's
        if self._running_job(connection, lease.submission_id) != lease.job_id:
            return  # an old job's lease (a bank job before the competition): the running job is another
        others = self.leases(connection, LEASES.c.job_id == lease.job_id)
        if any(other.live(now) for other in others if other.lease_id != lease.lease_id):
            return
        lapses = connection.execute(
            select(func.count())
            .select_from(LEASE_EVENTS.join(LEASES, LEASES.c.lease_id == LEASE_EVENTS.c.lease_id))
            .where(LEASES.c.job_id == lease.job_id, LEASE_EVENTS.c.kind == "lapsed")
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
            select(EVENTS.c.job_id)
            .where(EVENTS.c.submission_id == submission_id, EVENTS.c.status == "running")
            .order_by(EVENTS.c.id.desc())
            .limit(1)
        ).scalar()

    def _sweep(self, connection: Connection, now: datetime) -> None:
        """Record every lease that ran out without a heartbeat (and requeue its job)."""
        ended = select(LEASE_EVENTS.c.lease_id).where(LEASE_EVENTS.c.kind.in_(LEASE_ENDS))
        for lease in self.leases(connection, LEASES.c.lease_id.not_in(ended)):
            if lease.expires_at <= now:
                self._end(
                    connection,
                    lease,
                    "lapsed",
                    now,
                    f"no heartbeat since it ran out at {_at(lease.expires_at)}",
                )

    # -- claiming ----------------------------------------------------------------------------------

    def candidates(self, connection: Connection, competition: bool, limit: int | None = CANDIDATES_PER_CLAIM):
        """Admitted submissions that may still need an evaluation, in the order they entered the queue.

        Without a race bank an evaluation is a bank job; with one it is a qualifying job, and only
        qualifying results count (a submission from before the competition has bank results only). With
        several validators per submission a `running` or `scored` one is still a candidate while its
        results are short — under the competition only once it has a qualifying job: a bank job's
        status is not a qualifying run's (`_queue_backlog` queues those that get one).

        The order is the order of entering the queue: the newest `queued` event that names no job — the
        submission's first, or the one `_queue_backlog` appends when the competition starts for it (a
        lease ending requeues under its job's id and keeps the place). So a submission evaluated before
        the race bank existed waits behind whatever was queued when the competition reached it, rather
        than jumping the queue by its old id."""
        wanted = self.policy.validators_per_submission
        latest = latest_events()
        counted = (
            JOBS.c.kind == "qualifying" if competition else or_(JOBS.c.kind.is_(None), JOBS.c.kind != "race")
        )
        results = (
            select(RESULTS.c.submission_id, func.count().label("n"))
            .join(JOBS, JOBS.c.job_id == RESULTS.c.job_id)
            .where(counted)
            .group_by(RESULTS.c.submission_id)
            .subquery()
        )
        entered = (
            select(EVENTS.c.submission_id, func.max(EVENTS.c.id).label("event_id"))
            .where(EVENTS.c.status == "queued", EVENTS.c.job_id.is_(None))
            .group_by(EVENTS.c.submission_id)
            .subquery()
        )
        if wanted == 1:
            waiting = EVENTS.c.status == "queued"
        elif competition:
            qualifying = select(JOBS.c.submission_id).where(JOBS.c.kind == "qualifying")
            waiting = or_(
                EVENTS.c.status == "queued",
                EVENTS.c.status.in_(("running", "scored")) & SUBMISSIONS.c.submission_id.in_(qualifying),
            )
        else:
            waiting = EVENTS.c.status.in_(("queued", "running", "scored"))
        query = (
            select(
                SUBMISSIONS.c.submission_id,
                SUBMISSIONS.c.miner_hotkey,
                SUBMISSIONS.c.name,
                SUBMISSIONS.c.code_sha256,
                SUBMISSIONS.c.code_size,
                SUBMISSIONS.c.created_at,
            )
            .join(latest, latest.c.submission_id == SUBMISSIONS.c.submission_id)
            .join(EVENTS, EVENTS.c.id == latest.c.event_id)
            .join(entered, entered.c.submission_id == SUBMISSIONS.c.submission_id)
            .outerjoin(results, results.c.submission_id == SUBMISSIONS.c.submission_id)
            .where(
                SUBMISSIONS.c.admitted.is_(True),
                waiting,
                func.coalesce(results.c.n, 0) < wanted,
            )
            .order_by(entered.c.event_id, SUBMISSIONS.c.id)
            .limit(limit)
        )
        return connection.execute(query).all()

    def _queue_backlog(self, connection: Connection, now: datetime) -> int:
        """Queue for its qualifying run every submission the competition has not reached yet; how many.

        A submission admitted before the arena had a race bank was given a bank job, and once that is
        scored nothing else would ever evaluate it: it could never qualify, nor race, until its miner
        resubmitted (and waited out a cooldown). So, while the competition is on, every claim first
        appends `queued` (a new event; nothing is updated) to each admitted submission that
        - is `scored` and has no qualifying job — evaluated on the arena's bank only (a race job needs
          a qualifying run first), and
        - is its hotkey's newest admitted submission: one the hotkey replaced since is not qualified (a
          second qualified file would be a second chance at the race; a rejected file replaces nothing,
          as for `RaceEngine.qualifiers`).
        A `failed` submission stays failed (its code hung or killed every validator that ran it); a
        rejected one is never evaluated; a `queued` or `running` one is still in the queue, and its
        claim gives it a qualifying job on the same terms. The queued event names no job, so the
        submission enters the queue now, behind what was already waiting (`candidates`), and it is
        appended once: from then on the submission has a qualifying job or is no longer `scored`."""
        latest = latest_events()
        newest = (
            select(func.max(SUBMISSIONS.c.id))
            .where(SUBMISSIONS.c.admitted.is_(True))
            .group_by(SUBMISSIONS.c.miner_hotkey)
        )
        qualifying = select(JOBS.c.submission_id).where(JOBS.c.kind == "qualifying")
        stranded = connection.execute(
            select(SUBMISSIONS.c.submission_id)
            .join(latest, latest.c.submission_id == SUBMISSIONS.c.submission_id)
            .join(EVENTS, EVENTS.c.id == latest.c.event_id)
            .where(
                SUBMISSIONS.c.id.in_(newest),
                EVENTS.c.status == "scored",
                SUBMISSIONS.c.submission_id.not_in(qualifying),
            )
            .order_by(SUBMISSIONS.c.id)
        ).scalars()
        queued = 0
        for submission_id in stranded:
            event = SubmissionEvent(
                status="queued",
                actor="arena",
                detail="the competition is on (the arena has a race bank): queued for the qualifying run "
                "this submission, evaluated on the arena's bank before, never had",
                at=now,
            )
            self.ledger.event_within(connection, submission_id, event)
            queued += 1
        return queued

    def _has_room(
        self, connection: Connection, job_id: str, hotkey: str, now: datetime, cap: int | None = -1
    ) -> bool:
        """Fewer results and live leases than the arena wants (`cap`, default `validators_per_submission`;
        None: every validator), and none of them this validator's."""
        if cap == -1:
            cap = self.policy.validators_per_submission
        posted = set(
            connection.execute(select(RESULTS.c.validator_hotkey).where(RESULTS.c.job_id == job_id)).scalars()
        )
        holders = {
            lease.validator_hotkey
            for lease in self.leases(connection, LEASES.c.job_id == job_id)
            if lease.live(now)
        }
        return hotkey not in posted | holders and (cap is None or len(posted) + len(holders) < cap)

    def _pick(
        self,
        connection: Connection,
        hotkey: str,
        now: datetime,
        bank: Bank,
        fingerprint: str,
        competition: bool,
    ):
        """(submission row, JobSpec) of the job this validator should take next, or None.

        Running races come first (they have a deadline, and every validator evaluates every racer);
        then the submission queued longest that still needs its qualifying (or whole-bank) run."""
        for job in self._open_race_jobs(connection):
            if self._has_room(connection, job.job_id, hotkey, now, cap=None):
                return job, self.job_problems(job)
        start = self.competition_start(now) if competition else None
        for candidate in self.candidates(connection, competition):
            if competition:
                spec = self.qualifying_spec(candidate.submission_id, candidate.created_at, fingerprint, start)
            else:
                spec = self.bank_spec(candidate.submission_id, bank, fingerprint)
            if self._has_room(connection, spec.job_id, hotkey, now):
                return candidate, spec
        return None

    def claim(self, hotkey: str) -> JobOffer | None:
        """The oldest job this validator may take, under a new lease; None when there is no work."""
        bank, fingerprint = self.bank(), self.fingerprint()
        now = self.now()
        expires = now + timedelta(seconds=self.policy.lease_s)
        lease_id = uuid.uuid4().hex
        with writing(self.engine) as connection:
            self._lock(connection)
            self._sweep(connection, now)
            competition = self.competition_on()
            if competition:
                self._queue_backlog(connection, now)
            chosen = self._pick(connection, hotkey, now, bank, fingerprint, competition)
            if chosen is None:
                return None
            submission, spec = chosen
            job_id = spec.job_id
            self.insert_job(connection, spec, submission.submission_id, fingerprint, now)
            connection.execute(
                insert(LEASES).values(
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
                    detail=f"claimed under lease {lease_id} until {_at(expires)}",
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

    def heartbeat(self, hotkey: str, lease_id: str) -> LeaseView:
        """Extend a live lease by `lease_s` from now; a lease found run out lapses here and now."""
        now = self.now()
        with writing(self.engine) as connection:
            self._lock(connection)
            lease = self._own_lease(connection, lease_id, hotkey)
            if lease.ended is None and lease.expires_at <= now:
                self._end(
                    connection,
                    lease,
                    "lapsed",
                    now,
                    f"its heartbeat came after it ran out at {_at(lease.expires_at)}",
                )
                lapsed = lease
            else:
                lapsed = None
                if lease.ended is None:
                    expires = now + timedelta(seconds=self.policy.lease_s)
                    self._event(connection, lease, "heartbeat", now, expires_at=expires)
        if lapsed is not None:
            raise JobRefused(
                409,
                "lease_lapsed",
                f"lease {lease_id} ran out at {_at(lapsed.expires_at)} without a heartbeat; its job went back to "
                "the queue — stop working on it",
            )
        if lease.ended is not None:
            raise JobRefused(409, "lease_ended", f"lease {lease_id} has ended ({lease.ended})")
        return LeaseView(lease_id=lease_id, job_id=lease.job_id, expires_at=expires)

    def release(self, hotkey: str, lease_id: str, reason: str) -> LeaseView:
        """Give a job back (the validator cannot evaluate it); it is claimable again at once."""
        now = self.now()
        with writing(self.engine) as connection:
            self._lock(connection)
            lease = self._own_lease(connection, lease_id, hotkey)
            if lease.ended is None:
                self._end(connection, lease, "released", now, reason)
        if lease.ended is not None:
            raise JobRefused(409, "lease_ended", f"lease {lease_id} has ended ({lease.ended})")
        return LeaseView(lease_id=lease_id, job_id=lease.job_id, expires_at=now, ended="released")

    def code(self, hotkey: str, lease_id: str) -> tuple[bytes, str]:
        """The submission's code for the holder of a live lease on its job (verified by the code store)."""
        now = self.now()
        with self.engine.connect() as connection:
            lease = self._own_lease(connection, lease_id, hotkey)
            sha256 = connection.execute(
                select(SUBMISSIONS.c.code_sha256).where(SUBMISSIONS.c.submission_id == lease.submission_id)
            ).scalar_one()
        if not lease.live(now):
            raise JobRefused(409, "lease_ended", f"lease {lease_id} is no longer live; claim a job again")
        return self.arena.code.get(sha256), sha256

    # -- results -----------------------------------------------------------------------------------

    def post(self, hotkey: str, body: bytes) -> tuple[ResultAccepted, bool]:
        """Check a posted result against its job and store it with its records in one transaction."""
        try:
            post = ResultPost.model_validate_json(body)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            shown = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors[:SHOWN_PROBLEMS]
            )
            more = f" (+{len(errors) - SHOWN_PROBLEMS} more)" if len(errors) > SHOWN_PROBLEMS else ""
            raise JobRefused(400, "bad_body", f"not a result: {shown}{more}") from None
        with self.engine.connect() as connection:
            lease = self._own_lease(connection, post.lease_id, hotkey)
            job = connection.execute(select(JOBS).where(JOBS.c.job_id == lease.job_id)).one()
            submission = connection.execute(
                select(SUBMISSIONS).where(SUBMISSIONS.c.submission_id == lease.submission_id)
            ).one()
        if post.job_id != lease.job_id:
            raise JobRefused(
                409, "wrong_job", f"lease {post.lease_id} is for job {lease.job_id}, not job {post.job_id}"
            )
        problems = self.job_problems(job).problems
        ref = JobRef(
            job_id=job.job_id,
            submission_id=submission.submission_id,
            miner_hotkey=submission.miner_hotkey,
            code_sha256=submission.code_sha256,
            suite=job.suite,
            suite_version=job.suite_version,
            scoring_pipeline_version=job.scoring_pipeline_version,
        )
        found = record_problems(post.records, ref, problems, hotkey)
        found += outcome_problems(post.outcomes, post.records) if not found else []
        if found:
            more = f" (+{len(found) - SHOWN_PROBLEMS} more)" if len(found) > SHOWN_PROBLEMS else ""
            raise JobRefused(
                422,
                "bad_result",
                f"not job {job.job_id}'s result: " + "; ".join(found[:SHOWN_PROBLEMS]) + more,
            )
        order = {problem.problem_id: position for position, problem in enumerate(problems)}
        records = sorted(post.records, key=lambda record: order[record.problem.problem_id])
        result = ResultIn(
            submission_id=submission.submission_id,
            job_id=job.job_id,
            validator_hotkey=hotkey,
            suite=job.suite,
            suite_version=job.suite_version,
            scoring_pipeline_version=job.scoring_pipeline_version,
            problems=[problem_outcome(record) for record in records],
        )
        now = self.now()

        def store_with_result(connection: Connection) -> None:
            self._lock(connection)
            current = self._own_lease(connection, post.lease_id, hotkey)
            if current.ended is not None:
                raise JobRefused(409, "lease_ended", f"lease {post.lease_id} has ended ({current.ended})")
            if current.expires_at <= now:
                raise JobRefused(
                    409,
                    "lease_lapsed",
                    f"lease {post.lease_id} ran out at {_at(current.expires_at)}; the job went back to the "
                    "queue and this result is not kept",
                )
            try:
                self.arena.store.add_within(connection, records)
            except StoreError as exc:
                raise JobRefused(422, "bad_result", f"the store cannot keep a record: {exc}") from None
            self._event(connection, current, "completed", now, detail=f"{len(records)} records stored")

        try:
            view, created = self.ledger.add_result(result, now, within=store_with_result)
        except ResultConflictError as exc:
            raise JobRefused(409, "conflict", str(exc)) from None
        record_ids = [record.record_id for record in records]
        return ResultAccepted(created=created, result=view, record_ids=record_ids), created
