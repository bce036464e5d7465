"""The queue: which submissions and race jobs still need a validator, in the order they get one.

Running races come first (they have a deadline, and every validator evaluates every racer); then the
submission queued longest that still needs its qualifying (or, before the competition, whole-bank) run.
Once the competition is on, a submission scored on the arena's bank before that is queued again for its
qualifying run (`queue_backlog`) if it is still its hotkey's newest admitted one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, or_, select

from shoparena.arena.jobs.leases import read_leases
from shoparena.arena.ledger import SubmissionLedger, latest_events
from shoparena.arena.models import SubmissionEvent
from shoparena.arena.tables import (
    JOB_LEASES,
    JOBS,
    RACE_EVENTS,
    RACE_OUTCOMES,
    SUBMISSION_EVENTS,
    SUBMISSION_RESULTS,
    SUBMISSIONS,
)

CANDIDATES_PER_CLAIM = 500
"""Submissions a claim looks at, oldest first (with one validator per submission the first fits)."""


def candidates(
    connection: Connection, wanted: int, competition: bool, limit: int | None = CANDIDATES_PER_CLAIM
):
    """Admitted submissions that may still need an evaluation (`wanted` validators each), in the order
    they entered the queue.

    Without a race bank an evaluation is a bank job; with one it is a qualifying job, and only
    qualifying results count (a submission from before the competition has bank results only). With
    several validators per submission a `running` or `scored` one is still a candidate while its
    results are short — under the competition only once it has a qualifying job: a bank job's
    status is not a qualifying run's (`queue_backlog` queues those that get one).

    The order is the order of entering the queue: the newest `queued` event that names no job — the
    submission's first, or the one `queue_backlog` appends when the competition starts for it (a
    lease ending requeues under its job's id and keeps the place). So a submission evaluated before
    the race bank existed waits behind whatever was queued when the competition reached it, rather
    than jumping the queue by its old id."""
    latest = latest_events()
    counted = (
        JOBS.c.kind == "qualifying" if competition else or_(JOBS.c.kind.is_(None), JOBS.c.kind != "race")
    )
    results = (
        select(SUBMISSION_RESULTS.c.submission_id, func.count().label("n"))
        .join(JOBS, JOBS.c.job_id == SUBMISSION_RESULTS.c.job_id)
        .where(counted)
        .group_by(SUBMISSION_RESULTS.c.submission_id)
        .subquery()
    )
    entered = (
        select(SUBMISSION_EVENTS.c.submission_id, func.max(SUBMISSION_EVENTS.c.id).label("event_id"))
        .where(SUBMISSION_EVENTS.c.status == "queued", SUBMISSION_EVENTS.c.job_id.is_(None))
        .group_by(SUBMISSION_EVENTS.c.submission_id)
        .subquery()
    )
    if wanted == 1:
        waiting = SUBMISSION_EVENTS.c.status == "queued"
    elif competition:
        qualifying = select(JOBS.c.submission_id).where(JOBS.c.kind == "qualifying")
        waiting = or_(
            SUBMISSION_EVENTS.c.status == "queued",
            SUBMISSION_EVENTS.c.status.in_(("running", "scored"))
            & SUBMISSIONS.c.submission_id.in_(qualifying),
        )
    else:
        waiting = SUBMISSION_EVENTS.c.status.in_(("queued", "running", "scored"))
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
        .join(SUBMISSION_EVENTS, SUBMISSION_EVENTS.c.id == latest.c.event_id)
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


def queue_backlog(connection: Connection, ledger: SubmissionLedger, now: datetime) -> int:
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
        .join(SUBMISSION_EVENTS, SUBMISSION_EVENTS.c.id == latest.c.event_id)
        .where(
            SUBMISSIONS.c.id.in_(newest),
            SUBMISSION_EVENTS.c.status == "scored",
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
        ledger.event_within(connection, submission_id, event)
        queued += 1
    return queued


def open_race_jobs(connection: Connection):
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


def has_room(connection: Connection, job_id: str, hotkey: str, now: datetime, cap: int | None) -> bool:
    """Fewer results and live leases than `cap` (None: every validator), and none of them this
    validator's."""
    posted = set(
        connection.execute(
            select(SUBMISSION_RESULTS.c.validator_hotkey).where(SUBMISSION_RESULTS.c.job_id == job_id)
        ).scalars()
    )
    holders = {
        lease.validator_hotkey
        for lease in read_leases(connection, JOB_LEASES.c.job_id == job_id)
        if lease.live(now)
    }
    return hotkey not in posted | holders and (cap is None or len(posted) + len(holders) < cap)
