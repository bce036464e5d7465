"""The audit log: one append-only row per refused request (all that is kept of it) and per accepted
mutation. Values a client claimed are cut to the column sizes, so a hostile header cannot bloat it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import Engine, insert, select

from shoparena.arena.db import writing
from shoparena.arena.tables import AUDIT


class AuditRecord(BaseModel):
    created_at: datetime
    method: str
    path: str
    remote: str | None = None
    hotkey: str | None = None
    nonce: str | None = None
    status: int
    reason: str
    detail: str | None = None
    submission_id: str | None = None


def _cut(value: str | None, length: int) -> str | None:
    if value is None:
        return None
    value = value.encode("utf-8", "replace").decode("utf-8")  # lone surrogates from a decoded header
    return value if len(value) <= length else value[: length - 1] + "…"


class AuditLog:
    def __init__(self, engine: Engine):
        self.engine = engine

    def write(self, record: AuditRecord) -> None:
        values = record.model_dump()
        for column in AUDIT.columns:
            length = getattr(column.type, "length", None)
            if length and isinstance(values.get(column.name), str):
                values[column.name] = _cut(values[column.name], length)
        with writing(self.engine) as connection:
            connection.execute(insert(AUDIT).values(**values))

    def entries(self, limit: int = 100, hotkey: str | None = None) -> list[AuditRecord]:
        """Newest first."""
        query = select(AUDIT).order_by(AUDIT.c.id.desc()).limit(limit)
        if hotkey is not None:
            query = query.where(AUDIT.c.hotkey == hotkey)
        with self.engine.connect() as connection:
            return [
                AuditRecord(**{k: v for k, v in row._asdict().items() if k != "id"})
                for row in connection.execute(query)
            ]
