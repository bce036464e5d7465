"""Selecting stored evaluations: one filter model for the API, the CLI and every export.

Results stream by keyset pagination on the row id (`WHERE id > last ORDER BY id LIMIT n`), so any
result size is read with bounded memory on both dialects and without server-side cursors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from sqlalchemy import ColumnElement, Engine, Select, and_, exists, func, select

from shoparena.store.records import parse_started_at
from shoparena.store.schema import Evaluation, Invalidation

EVALUATIONS = Evaluation.__table__
INVALIDATIONS = Invalidation.__table__
DEFAULT_PAGE = 1000


class RecordFilter(BaseModel):
    """What to select; every field left None matches everything. Invalidated rows are excluded unless
    `include_invalidated`."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = None
    """An agent id or an agent spec (`reference:pipeline`)."""
    miner: str | None = None
    problem: str | None = None
    suite: str | None = None
    suite_version: str | None = None
    bucket: str | None = None
    run: str | None = None
    since: datetime | None = None
    """Episodes that started at or after this time (naive times are UTC)."""
    until: datetime | None = None
    """Episodes that started before this time."""
    min_rule: float | None = None
    max_rule: float | None = None
    success: bool | None = None
    min_quality: float | None = None
    include_invalidated: bool = False

    @field_validator("since", "until", mode="before")
    @classmethod
    def _utc(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_started_at(value)
        return value

    def conditions(self) -> list[ColumnElement[bool]]:
        c = EVALUATIONS.c
        where: list[ColumnElement[bool]] = []
        if self.agent is not None:
            where.append((c.agent_id == self.agent) | (c.agent_spec == self.agent))
        for value, column in (
            (self.miner, c.miner_hotkey),
            (self.problem, c.problem_id),
            (self.suite, c.suite),
            (self.suite_version, c.suite_version),
            (self.bucket, c.bucket),
            (self.run, c.run_id),
            (self.success, c.success),
        ):
            if value is not None:
                where.append(column == value)
        if self.since is not None:
            where.append(c.created_at >= self.since)
        if self.until is not None:
            where.append(c.created_at < self.until)
        if self.min_rule is not None:
            where.append(c.rule_score >= self.min_rule)
        if self.max_rule is not None:
            where.append(c.rule_score <= self.max_rule)
        if self.min_quality is not None:
            where.append(c.judge_quality >= self.min_quality)
        if not self.include_invalidated:
            where.append(~invalidated_clause())
        return where


def invalidated_clause() -> ColumnElement[bool]:
    return exists().where(INVALIDATIONS.c.record_id == EVALUATIONS.c.record_id)


def iter_rows(
    engine: Engine,
    columns: Sequence[Any],
    where: RecordFilter,
    page: int = DEFAULT_PAGE,
) -> Iterator[list[Any]]:
    """Pages of result rows (each a list of up to `page` rows) in ingest order."""
    last = 0
    conditions = where.conditions()
    while True:
        query: Select = (
            select(EVALUATIONS.c.id, *columns)
            .where(and_(EVALUATIONS.c.id > last, *conditions))
            .order_by(EVALUATIONS.c.id)
            .limit(page)
        )
        with engine.connect() as connection:
            rows = connection.execute(query).all()
        if not rows:
            return
        last = rows[-1][0]
        yield [row[1:] for row in rows]
        if len(rows) < page:
            return


def count(engine: Engine, where: RecordFilter) -> int:
    query = select(func.count()).select_from(EVALUATIONS).where(and_(True, *where.conditions()))
    with engine.connect() as connection:
        return int(connection.execute(query).scalar_one())
