"""Leases, as the job layer reads and writes them: a validator's claim on a job (`job_leases`) and what
happened to it since (`lease_events`: heartbeats, and how it ended), both append-only, so a lease's
expiry is its newest heartbeat's and never an updated column.

Every write of the job layer takes `lock` first: SQLite's write lock (and `db.writing`'s process lock)
serialises writers already; on PostgreSQL a transaction-scoped advisory lock does, so two validators
never both get the last place on a job, and a lapse and a result for the same lease never both happen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, insert, select

from shoparena.arena.errors import JobRefused
from shoparena.arena.models import LeaseView
from shoparena.arena.tables import JOB_LEASES, LEASE_EVENTS

LEASE_ENDS = ("completed", "released", "lapsed")


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


def at(moment: datetime) -> str:
    """A lease time as refusals and events name it."""
    return moment.isoformat(timespec="seconds")


def lock(connection: Connection) -> None:
    """Serialise the job layer's writers (see the module's docstring)."""
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(func.hashtextextended("arena:jobs", 0))))


def read_leases(connection: Connection, condition) -> list[Lease]:
    """The leases `condition` selects, each with its newest heartbeat's expiry and how it ended."""
    rows = connection.execute(select(JOB_LEASES).where(condition).order_by(JOB_LEASES.c.id)).all()
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


def open_leases(connection: Connection) -> list[Lease]:
    """Every lease without an end event (live, or run out and not yet swept)."""
    ended = select(LEASE_EVENTS.c.lease_id).where(LEASE_EVENTS.c.kind.in_(LEASE_ENDS))
    return read_leases(connection, JOB_LEASES.c.lease_id.not_in(ended))


def own_lease(connection: Connection, lease_id: str, hotkey: str) -> Lease:
    """The lease `lease_id`, refused when there is none or it is another validator's."""
    found = read_leases(connection, JOB_LEASES.c.lease_id == lease_id)
    if not found:
        raise JobRefused(404, "no_such_lease", f"no lease {lease_id} in this arena")
    lease = found[0]
    if lease.validator_hotkey != hotkey:
        raise JobRefused(403, "not_your_lease", f"lease {lease_id} belongs to another validator")
    return lease


def lease_event(connection: Connection, lease: Lease, kind: str, now: datetime, **values) -> None:
    """Append a heartbeat or an end to a lease."""
    connection.execute(
        insert(LEASE_EVENTS).values(lease_id=lease.lease_id, kind=kind, created_at=now, **values)
    )
