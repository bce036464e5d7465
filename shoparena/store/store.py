"""The trajectory store (SPEC §6): every evaluation kept forever with its provenance, append-only.

store = open_store("runs.db")            # or postgresql://user@host/db; migrates to head
report = store.ingest_paths(["run/"])    # idempotent: run it twice, nothing changes
store.invalidate(record_id, reason="judge prompt-injected")
store.export(RecordFilter(agent="reference:pipeline", success=True), Path("ok.jsonl"))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field
from sqlalchemy import Connection, Engine, and_, func, select
from sqlalchemy.exc import DatabaseError

from shoparena.records.trajectory import TrajectoryRecord
from shoparena.store.engine import current_revision, make_engine, upgrade_to_head, write_transaction
from shoparena.store.errors import RecordConflictError, StoreError, UnknownRecordError
from shoparena.store.export import (
    ExportFormat,
    export,
    iter_canonical,
    stored_text_column,
    verified_record_bytes,
)
from shoparena.store.ingest import DEFAULT_BATCH, IngestReport, ingest_records, store_prepared
from shoparena.store.query import EVALUATIONS, INVALIDATIONS, RecordFilter, count, invalidated_clause
from shoparena.store.reading import read_records
from shoparena.store.records import MAX_LENGTHS, RecordRejected, prepare
from shoparena.store.rejects import Reject, Where
from shoparena.store.schema import UTCDateTime


class InvalidationInfo(BaseModel):
    record_id: str
    reason: str
    invalidated_by: str | None
    created_at: datetime


class GroupStats(BaseModel):
    key: str | None
    evaluations: int
    successes: int
    mean_rule: float | None
    mean_quality: float | None


class StoreStats(BaseModel):
    url: str
    revision: str | None
    evaluations: int
    invalidated: int
    runs: int
    problems: int
    first_episode: datetime | None
    last_episode: datetime | None
    by_agent: list[GroupStats] = Field(default_factory=list)
    by_bucket: list[GroupStats] = Field(default_factory=list)
    by_suite: list[GroupStats] = Field(default_factory=list)


class TrajectoryStore:
    """One open store. Thread-safe as SQLAlchemy engines are; close it (or use `with`) when done."""

    def __init__(self, engine: Engine, created_file: Path | None = None):
        self.engine = engine
        self.created_file = created_file
        """The SQLite file this open created (it did not exist before), else None."""

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    def discard_if_unused(self) -> bool:
        """Close, and delete the SQLite file if this open created it and it holds no evaluation: a
        command that stored nothing (every input rejected, an error) leaves no empty database behind."""
        created = self.created_file
        try:
            unused = created is not None and self.count(RecordFilter(include_invalidated=True)) == 0
        except Exception:
            unused = created is not None
        self.close()
        if not unused or created is None:
            return False
        for suffix in ("", "-wal", "-shm", "-journal"):
            created.with_name(created.name + suffix).unlink(missing_ok=True)
        return True

    # -- writing ------------------------------------------------------------------------------------

    def ingest(
        self,
        records: Iterable[TrajectoryRecord],
        *,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int], None] | None = None,
        on_reject: Callable[[Reject], None] | None = None,
    ) -> IngestReport:
        """Store records; ones stored already are duplicates, a changed one under a stored id a conflict."""
        return ingest_records(
            self.engine, records, batch_size=batch_size, progress=progress, on_reject=on_reject
        )

    def ingest_paths(
        self,
        paths: Sequence[str | os.PathLike],
        *,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int], None] | None = None,
        on_reject: Callable[[Reject], None] | None = None,
    ) -> IngestReport:
        """Store every record of run directories (their trajectories.jsonl) and JSONL files."""
        return ingest_records(
            self.engine, read_records(paths), batch_size=batch_size, progress=progress, on_reject=on_reject
        )

    def add(self, record: TrajectoryRecord) -> bool:
        """Store one record: True if new, False if stored already; raises on a conflict or a bad record."""
        report = self.ingest([record])
        report.raise_for_conflicts()
        if report.rejected:
            raise StoreError(f"record {record.record_id}: {report.rejects[0].reason}")
        return report.inserted == 1

    def add_within(self, connection: Connection, records: Sequence[TrajectoryRecord]) -> int:
        """Store records inside the caller's open write transaction, so they commit or roll back with
        the caller's own rows (the arena stores a validator's result and its records together).
        Returns how many were new (the rest were stored already, byte for byte); raises
        `RecordConflictError` for a changed record under a stored id and `StoreError` for a record the
        store cannot take — the caller's transaction should then roll back."""
        now = datetime.now(UTC)
        prepared = []
        for record in records:
            try:
                prepared.append(prepare(record, Where(f"record:{record.record_id}"), now, self.dialect))
            except RecordRejected as exc:
                raise StoreError(f"record {record.record_id}: {exc}") from None
        outcome = store_prepared(connection, prepared)
        for reject in outcome.rejects:
            raise RecordConflictError(
                reject.record_id or "?",
                reject.stored_sha256 or "?",
                reject.content_sha256 or "?",
                reject.source,
            )
        return outcome.inserted

    def invalidate(self, record_id: str, reason: str, by: str | None = None) -> InvalidationInfo:
        """Withdraw an evaluation by appending an invalidation row; the evaluation itself never changes."""
        reason = reason.strip()
        if not reason:
            raise StoreError("an invalidation needs a reason")
        if by is not None and len(by) > MAX_LENGTHS.get("miner_hotkey", 128):
            raise StoreError(f"invalidated_by is longer than {MAX_LENGTHS['miner_hotkey']} characters")
        info = InvalidationInfo(
            record_id=record_id, reason=reason, invalidated_by=by, created_at=datetime.now(UTC)
        )
        with write_transaction(self.engine) as connection:
            known = connection.execute(
                select(EVALUATIONS.c.id).where(EVALUATIONS.c.record_id == record_id)
            ).first()
            if known is None:
                raise UnknownRecordError(f"record {record_id} is not in the store {self.url}")
            connection.execute(INVALIDATIONS.insert().values(**info.model_dump()))
        return info

    # -- reading ------------------------------------------------------------------------------------

    def get(self, record_id: str) -> TrajectoryRecord | None:
        """The stored record with this id (invalidated or not), or None."""
        c = EVALUATIONS.c
        query = select(c.content_sha256, stored_text_column()).where(c.record_id == record_id)
        with self.engine.connect() as connection:
            stored = connection.execute(query).first()
        if stored is None:
            return None
        return TrajectoryRecord.model_validate_json(verified_record_bytes(record_id, *stored))

    def invalidations(self, record_id: str) -> list[InvalidationInfo]:
        c = INVALIDATIONS.c
        query = (
            select(c.record_id, c.reason, c.invalidated_by, c.created_at)
            .where(c.record_id == record_id)
            .order_by(c.id)
        )
        with self.engine.connect() as connection:
            return [InvalidationInfo(**row._asdict()) for row in connection.execute(query)]

    def canonical(self, where: RecordFilter | None = None) -> Iterator[tuple[str, bytes]]:
        """(record_id, exact canonical bytes) of every selected record, streamed in ingest order."""
        return iter_canonical(self.engine, where or RecordFilter())

    def records(self, where: RecordFilter | None = None) -> Iterator[TrajectoryRecord]:
        for _record_id, data in self.canonical(where):
            yield TrajectoryRecord.model_validate_json(data)

    def record_ids(self, where: RecordFilter | None = None) -> list[str]:
        return [record_id for record_id, _data in self.canonical(where)]

    def count(self, where: RecordFilter | None = None) -> int:
        return count(self.engine, where or RecordFilter())

    def export(
        self,
        out: Path,
        where: RecordFilter | None = None,
        fmt: ExportFormat = "jsonl",
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Write the selected records to `out` (replaced atomically); returns how many were written."""
        database = self.engine.url.database if self.dialect == "sqlite" else None
        if database and Path(database).exists() and Path(out).exists() and Path(out).samefile(database):
            raise StoreError(f"--out {out} is the store's own database file; export to another file")
        return export(self.engine, where or RecordFilter(), Path(out), fmt, progress)

    def stats(self, where: RecordFilter | None = None) -> StoreStats:
        c = EVALUATIONS.c
        where = where or RecordFilter()
        live = and_(True, *where.conditions())
        with self.engine.connect() as connection:
            totals = connection.execute(
                select(
                    func.count(),
                    func.count(func.distinct(c.run_id)),
                    func.count(func.distinct(c.problem_id)),
                    func.min(c.created_at),
                    func.max(c.created_at),
                ).where(live)
            ).one()
            invalidated = connection.execute(
                select(func.count()).select_from(EVALUATIONS).where(invalidated_clause())
            ).scalar_one()

            def grouped(column) -> list[GroupStats]:
                query = (
                    select(
                        column,
                        func.count(),
                        func.count().filter(c.success.is_(True)),
                        func.avg(c.rule_score),
                        func.avg(c.judge_quality),
                    )
                    .where(live)
                    .group_by(column)
                    .order_by(column)
                )
                return [
                    GroupStats(key=key, evaluations=n, successes=ok, mean_rule=rule, mean_quality=quality)
                    for key, n, ok, rule, quality in connection.execute(query)
                ]

            by_agent, by_bucket, by_suite = grouped(c.agent_id), grouped(c.bucket), grouped(c.suite)
        to_utc = UTCDateTime().process_result_value
        return StoreStats(
            url=self.url,
            revision=current_revision(self.engine),
            evaluations=totals[0],
            invalidated=invalidated,
            runs=totals[1],
            problems=totals[2],
            first_episode=_as_datetime(totals[3], to_utc, self.engine.dialect),
            last_episode=_as_datetime(totals[4], to_utc, self.engine.dialect),
            by_agent=by_agent,
            by_bucket=by_bucket,
            by_suite=by_suite,
        )


def _as_datetime(value, to_utc, dialect) -> datetime | None:
    """min()/max() lose the column type on SQLite (they come back as text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return to_utc(value, dialect)


def open_store(
    store: str | os.PathLike | None = None, *, migrate: bool = True, create: bool = True
) -> TrajectoryStore:
    """Open (creating if need be) the store at `store` (see `resolve_store_url`) and upgrade it to head.

    `create=False` is for commands that only read or amend a store: a SQLite path that does not exist is
    a `StoreURLError` naming it, not a new empty store (a PostgreSQL database is never created here).
    """
    engine = make_engine(store, create=create)
    database = engine.url.database
    created = None
    if engine.dialect.name == "sqlite" and database not in (None, "", ":memory:"):
        created = None if Path(database).exists() else Path(database)
    try:
        if migrate:
            upgrade_to_head(engine)
    except DatabaseError as exc:  # OperationalError, and "file is not a database" (a DatabaseError)
        engine.dispose()
        if created is not None:
            created.unlink(missing_ok=True)
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        shown = engine.url.render_as_string(hide_password=True)
        hint = (
            "; --store takes a store's SQLite file or a PostgreSQL URL" if "not a database" in reason else ""
        )
        raise StoreError(f"cannot open store {shown}: {reason}{hint}") from exc
    except BaseException:
        engine.dispose()
        raise
    return TrajectoryStore(engine, created)
