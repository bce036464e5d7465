"""The operator's view of an arena at one moment (`shoparena arena status`): how many submissions are in
each state, which ones the next claims will hand out and in what order, which validators hold which
jobs and until when, and why the latest failures failed.

It reads, in one snapshot, what the job layer itself decides on — the queue is `JobBoard`'s own
candidate order, a lease's expiry its newest heartbeat's — so what it shows is what the next claim
will do, not a second opinion. It writes nothing (a lease past its expiry lapses on the next claim's
sweep; here it is shown as overdue).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import func, select

from shoparena.arena.arena import Arena
from shoparena.arena.competition.cadence import WeightPushStatus, read_push_status
from shoparena.arena.competition.job_source import CompetitionJobSource
from shoparena.arena.competition.models import Freshness
from shoparena.arena.db import as_utc
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.jobs.leases import open_leases
from shoparena.arena.ledger import latest_events
from shoparena.arena.models import SubmissionStatus
from shoparena.arena.tables import JOBS, SUBMISSION_EVENTS, SUBMISSIONS

STATUSES: tuple[SubmissionStatus, ...] = ("queued", "running", "scored", "failed", "rejected")


class QueuedSubmission(BaseModel):
    position: int
    """1 = the next claim's first candidate."""
    submission_id: str
    miner_hotkey: str
    name: str
    submitted_at: datetime


class LiveLease(BaseModel):
    lease_id: str
    job_id: str
    job_kind: str
    """bank, qualifying or race."""
    submission_id: str
    validator_hotkey: str
    expires_at: datetime
    seconds_left: float
    """Negative: past its expiry without a heartbeat; the next claim's sweep lapses it."""


class RecentFailure(BaseModel):
    submission_id: str
    miner_hotkey: str
    name: str
    at: datetime
    detail: str


class LatestRace(BaseModel):
    race_id: str
    state: str
    opened_at: datetime
    closed_at: datetime | None
    incumbent_before: str | None
    winner: str | None
    cancel_reason: str | None


class ArenaOverview(BaseModel):
    at: datetime
    competition: bool
    """Whether the arena has a race bank (submissions get qualifying jobs)."""
    miners: int
    validators: int
    statuses: dict[str, int]
    """Submissions by their current status, every status listed."""
    queue: list[QueuedSubmission]
    queue_shown_of: int
    """How many submissions wait in all (`queue` shows the first few)."""
    leases: list[LiveLease]
    failures: list[RecentFailure]
    latest_race: LatestRace | None = None
    """The newest race (None: none yet, or no competition); `arena race status` has every detail."""
    weights_push: WeightPushStatus | None = None
    """The weights' cadence: the last push, failures in a row and the next try (None: never pushed)."""
    freshness: Freshness | None = None
    """Fresh held-out problems left and, when too few for a race, why the next race is postponed."""
    freshness_error: str | None = None
    """Why the race bank's rotation cannot be read (a bank too small, a changed manifest)."""


def arena_overview(
    arena: Arena, board: JobBoard | None = None, *, queue_limit: int = 10, failures_limit: int = 5
) -> ArenaOverview:
    board = board or JobBoard(arena, source=CompetitionJobSource(arena.dir, arena.config, arena.store.engine))
    now = board.now()
    competition = board.competition_on()
    newest_race = None
    fresh, fresh_error = None, None
    if competition:
        from shoparena.arena.competition.freshness import arena_freshness
        from shoparena.arena.competition.pools import PoolError
        from shoparena.arena.competition.view import CompetitionView

        try:
            fresh = arena_freshness(arena, now)
        except PoolError as exc:
            fresh_error = str(exc)

        races = CompetitionView(arena).races(1)
        if races:
            race = races[0]
            newest_race = LatestRace(
                race_id=race.race_id,
                state=race.state,
                opened_at=as_utc(race.opened_at),
                closed_at=as_utc(race.closed_at) if race.closed_at else None,
                incumbent_before=race.incumbent_before,
                winner=race.winner,
                cancel_reason=race.cancel_reason,
            )
    with arena.store.engine.connect() as connection:
        latest = latest_events()
        counts = dict(
            connection.execute(
                select(SUBMISSION_EVENTS.c.status, func.count())
                .join(latest, latest.c.event_id == SUBMISSION_EVENTS.c.id)
                .group_by(SUBMISSION_EVENTS.c.status)
            ).all()
        )
        waiting = board.candidates(connection, competition, limit=None)
        unended = open_leases(connection)
        kinds = dict(
            connection.execute(
                select(JOBS.c.job_id, JOBS.c.kind).where(
                    JOBS.c.job_id.in_([lease.job_id for lease in unended])
                )
            ).all()
        )
        failed = connection.execute(
            select(
                SUBMISSIONS.c.submission_id,
                SUBMISSIONS.c.miner_hotkey,
                SUBMISSIONS.c.name,
                SUBMISSION_EVENTS.c.created_at,
                SUBMISSION_EVENTS.c.detail,
            )
            .join(latest, latest.c.submission_id == SUBMISSIONS.c.submission_id)
            .join(SUBMISSION_EVENTS, SUBMISSION_EVENTS.c.id == latest.c.event_id)
            .where(SUBMISSION_EVENTS.c.status == "failed")
            .order_by(SUBMISSION_EVENTS.c.id.desc())
            .limit(failures_limit)
        ).all()
        neurons = arena.metagraph.all(connection)
    return ArenaOverview(
        at=now,
        competition=competition,
        miners=sum(1 for n in neurons if n.role == "miner"),
        validators=sum(1 for n in neurons if n.role == "validator"),
        statuses={status: counts.get(status, 0) for status in STATUSES},
        queue=[
            QueuedSubmission(
                position=i,
                submission_id=row.submission_id,
                miner_hotkey=row.miner_hotkey,
                name=row.name,
                submitted_at=as_utc(row.created_at),
            )
            for i, row in enumerate(waiting[:queue_limit], start=1)
        ],
        queue_shown_of=len(waiting),
        leases=[
            LiveLease(
                lease_id=lease.lease_id,
                job_id=lease.job_id,
                job_kind=kinds.get(lease.job_id) or "bank",
                submission_id=lease.submission_id,
                validator_hotkey=lease.validator_hotkey,
                expires_at=as_utc(lease.expires_at),
                seconds_left=(as_utc(lease.expires_at) - now).total_seconds(),
            )
            for lease in unended
        ],
        failures=[
            RecentFailure(
                submission_id=row.submission_id,
                miner_hotkey=row.miner_hotkey,
                name=row.name,
                at=as_utc(row.created_at),
                detail=row.detail or "",
            )
            for row in failed
        ],
        latest_race=newest_race,
        weights_push=read_push_status(arena.dir),
        freshness=fresh,
        freshness_error=fresh_error,
    )
