"""Idempotent bulk ingest: run directories or JSONL files of trajectory records into the store.

Each batch is one transaction: look up which record ids are stored already (same content hash: a
duplicate; a different one: a conflict, never an overwrite), then insert the rest with
`INSERT … ON CONFLICT (record_id) DO NOTHING RETURNING record_id` (multi-row VALUES pages); an id missing
from what it returns was stored by a concurrent ingester in between, and is classified the same way.
Bad lines are rejects (file:line, reason code and reason), counted per reason and skipped; the run goes
on. Should the database still refuse a batch (a case `records.prepare` did not foresee), the batch is
retried record by record, so only the refused record becomes a reject.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, Field
from sqlalchemy import Connection, Engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import InterfaceError, OperationalError, StatementError

from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store.engine import write_transaction
from shoparena.store.errors import RecordConflictError
from shoparena.store.query import EVALUATIONS
from shoparena.store.reading import TRAJECTORIES_FILE, count_lines, read_records
from shoparena.store.records import PreparedRecord, RecordRejected, prepare
from shoparena.store.rejects import CONFLICT, REFUSED_BY_DATABASE, Reject, Where

__all__ = [
    "TRAJECTORIES_FILE",
    "IngestReport",
    "Reject",
    "count_lines",
    "ingest_records",
    "read_records",
]

DEFAULT_BATCH = 2000
KEPT_REJECTS = 100
"""Rejects kept in the report itself; all of them go to `on_reject` (e.g. a rejects file)."""


class IngestReport(BaseModel):
    seen: int = 0
    """Entries read: non-empty lines, plus one per input rejected whole."""
    inserted: int = 0
    duplicates: int = 0
    rejected: int = 0
    conflicts: int = 0
    rejected_by_reason: dict[str, int] = Field(default_factory=dict)
    """Rejects per reason code (`shoparena.store.rejects.REASONS`)."""
    rejects: list[Reject] = Field(default_factory=list)
    """The first `KEPT_REJECTS` rejects (conflicts are also counted apart)."""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.rejected == 0

    def add_reject(self, reject: Reject) -> None:
        self.rejected += 1
        self.conflicts += reject.conflict
        self.rejected_by_reason[reject.kind] = self.rejected_by_reason.get(reject.kind, 0) + 1
        if len(self.rejects) < KEPT_REJECTS:
            self.rejects.append(reject)

    def raise_for_conflicts(self) -> None:
        """Raise `RecordConflictError` for the first conflict, if any (for callers that must not go on)."""
        for reject in self.rejects:
            if reject.conflict:
                raise RecordConflictError(
                    reject.record_id or "?",
                    reject.stored_sha256 or "?",
                    reject.content_sha256 or "?",
                    reject.source,
                )


# -- writing batches --------------------------------------------------------------------------------


def _insert_statement(dialect: str):
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(EVALUATIONS)
        .on_conflict_do_nothing(index_elements=["record_id"])
        .returning(EVALUATIONS.c.record_id)
    )


def _stored_hashes(connection: Connection, record_ids: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(record_ids), 5000):
        chunk = record_ids[start : start + 5000]
        query = select(EVALUATIONS.c.record_id, EVALUATIONS.c.content_sha256).where(
            EVALUATIONS.c.record_id.in_(chunk)
        )
        found.update((record_id, sha256) for record_id, sha256 in connection.execute(query))
    return found


def _conflict(item: PreparedRecord, stored_sha256: str) -> Reject:
    error = RecordConflictError(item.record_id, stored_sha256, item.content_sha256, item.where.source)
    return item.where.reject(
        CONFLICT,
        str(error),
        record_id=item.record_id,
        conflict=True,
        stored_sha256=stored_sha256,
        content_sha256=item.content_sha256,
    )


@dataclass(slots=True)
class _Outcome:
    """What one committed batch did; applied to the report only once its transaction committed."""

    inserted: int = 0
    duplicates: int = 0
    rejects: list[Reject] = field(default_factory=list)


def _store_batch(engine: Engine, batch: list[PreparedRecord]) -> _Outcome:
    with write_transaction(engine) as connection:
        return store_prepared(connection, batch)


def store_prepared(connection: Connection, batch: list[PreparedRecord]) -> _Outcome:
    """Insert a batch inside the caller's open write transaction: duplicates (same id, same content)
    are counted, a changed record under a stored id is a conflict reject, never an overwrite."""
    outcome = _Outcome()
    unique: dict[str, PreparedRecord] = {}
    for item in batch:
        earlier = unique.get(item.record_id)
        if earlier is None:
            unique[item.record_id] = item
        elif earlier.content_sha256 == item.content_sha256:
            outcome.duplicates += 1
        else:
            outcome.rejects.append(_conflict(item, earlier.content_sha256))
    stored = _stored_hashes(connection, list(unique))
    fresh = []
    for record_id, item in unique.items():
        known = stored.get(record_id)
        if known is None:
            fresh.append(item)
        elif known == item.content_sha256:
            outcome.duplicates += 1
        else:
            outcome.rejects.append(_conflict(item, known))
    if not fresh:
        return outcome
    statement = _insert_statement(connection.dialect.name)
    inserted = set(connection.execute(statement, [item.row for item in fresh]).scalars())
    outcome.inserted += len(inserted)
    raced = [item for item in fresh if item.record_id not in inserted]
    if not raced:
        return outcome
    # A concurrent ingester stored these ids between our lookup and our insert: the same content
    # is a duplicate, a different one a conflict (ON CONFLICT kept theirs, never ours).
    winners = _stored_hashes(connection, [item.record_id for item in raced])
    for item in raced:
        if winners.get(item.record_id) == item.content_sha256:
            outcome.duplicates += 1
        else:
            outcome.rejects.append(_conflict(item, winners.get(item.record_id, "?" * 64)))
    return outcome


def _refusal(exc: StatementError) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _write_batch(engine: Engine, batch: list[PreparedRecord], report: IngestReport, emit) -> None:
    """Store a batch; a batch the database refuses is retried record by record (see the docstring).

    Lost connections, locks and full disks (OperationalError, InterfaceError) are not a record's fault:
    they raise, and batches committed before them stay stored.
    """
    try:
        outcome = _store_batch(engine, batch)
    except (OperationalError, InterfaceError):
        raise
    except StatementError as exc:
        if len(batch) > 1:
            for item in batch:
                _write_batch(engine, [item], report, emit)
            return
        item = batch[0]
        reason = f"the database refused record {item.record_id}: {_refusal(exc)}"
        emit(item.where.reject(REFUSED_BY_DATABASE, reason, record_id=item.record_id))
        return
    report.inserted += outcome.inserted
    report.duplicates += outcome.duplicates
    for reject in outcome.rejects:
        emit(reject)


class _BatchWriter:
    """Writes batches on one background thread while the caller parses the next one.

    The database drivers release the GIL while SQLite writes pages or PostgreSQL answers, so parsing
    and validating (pure CPU) overlaps with storing. The queue holds one batch: memory stays bounded
    at about three batches (one parsing, one waiting, one writing).
    """

    def __init__(self, engine: Engine, report: IngestReport, emit, progress):
        self.engine = engine
        self.report = report
        self.emit = emit
        self.progress = progress
        self.queue: queue.Queue = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="store-ingest-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            job = self.queue.get()
            if job is None:
                return
            batch, covered = job
            if self.error is not None:
                continue  # drain: the caller stops at its next put
            try:
                if batch:
                    _write_batch(self.engine, batch, self.report, self.emit)
                if self.progress is not None:
                    self.progress(covered)
            except BaseException as exc:
                self.error = exc

    def put(self, batch: list[PreparedRecord], covered: int) -> None:
        self._raise()
        self.queue.put((batch, covered))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error


def ingest_records(
    engine: Engine,
    records: Iterable[TrajectoryRecord | tuple[str | Where, TrajectoryRecord | Reject]],
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int], None] | None = None,
    on_reject: Callable[[Reject], None] | None = None,
) -> IngestReport:
    """Store every record (or `(where, record | reject)` pair, as `read_records` yields them).

    Returns the counts; rejects and conflicts are reported, never raised, so one bad line never stops a
    batch job (call `report.raise_for_conflicts()` where a conflict must stop the caller). Database
    errors (unreachable server, full disk) do raise: batches committed before them stay stored, and
    ingesting the same input again completes the job.
    """
    started = datetime.now(UTC)
    report = IngestReport()
    dialect = engine.dialect.name
    lock = threading.Lock()

    def emit(reject: Reject) -> None:
        with lock:
            report.add_reject(reject)
            if on_reject is not None:
                on_reject(reject)

    writer = _BatchWriter(engine, report, emit, progress)
    batch: list[PreparedRecord] = []
    covered = 0
    try:
        for entry in records:
            report.seen += 1
            covered += 1
            if isinstance(entry, TrajectoryRecord):
                where, item = Where(f"record:{entry.record_id}"), entry
            else:
                where, item = entry
                if isinstance(where, str):
                    where = Where(where)
            if isinstance(item, Reject):
                emit(item)
            else:
                try:
                    batch.append(prepare(item, where, started, dialect))
                except RecordRejected as exc:
                    emit(where.reject(exc.kind, str(exc), record_id=item.record_id))
            if len(batch) >= batch_size:
                writer.put(batch, covered)
                batch, covered = [], 0
        if batch or covered:
            writer.put(batch, covered)
    finally:
        writer.close()
    report.wall_s = (datetime.now(UTC) - started).total_seconds()
    return report
