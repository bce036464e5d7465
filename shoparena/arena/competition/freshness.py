"""Freshness (issue 22): which race-bank problems may still be raced, and why a race waits when too few
may.

A race reveals its problems when it closes, so every leak cluster a race has drawn is **retired**: the
races table is the record of it (`races.race_clusters`, one row per race ever opened, cancelled ones
included — their problems went to validators and their seed is revealed too). `pools` keeps retired
clusters out of every later rotation's open and held-out sides and out of every later draw; here the
engine, the operator's view, the public API and the season simulator read how many fresh held-out
problems are left and, when fewer than `race_problems`, the reason the next race is postponed.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, select

from shoparena.arena.competition.bank import bank_path, read_bank
from shoparena.arena.competition.models import Freshness
from shoparena.arena.competition.pools import fresh_heldout, period_of, preview_rotation
from shoparena.arena.config import ArenaConfig
from shoparena.arena.tables import RACES


def retired_clusters(connection: Connection, before_race: str | None = None) -> set[str]:
    """The leak clusters drawn by every race opened so far (or opened before race `before_race`)."""
    query = select(RACES.c.race_clusters)
    if before_race is not None:
        opened = select(RACES.c.id).where(RACES.c.race_id == before_race).scalar_subquery()
        query = query.where(RACES.c.id < opened)
    clusters: set[str] = set()
    for row in connection.execute(query).scalars():
        clusters.update(row or [])
    return clusters


def postponement(fresh: int, needed: int, period: int, frozen: bool, next_period_at: datetime) -> str:
    when = (
        f"they join at the next rotation period ({next_period_at:%Y-%m-%d %H:%M} UTC): this one is frozen"
        if frozen
        else "they join the rotation of this period when it is frozen"
    )
    return (
        f"race postponed: {fresh} fresh held-out problem(s) left in rotation period {period}, a race needs "
        f"{needed} (every other held-out problem has been raced: its answer is public and it is never "
        f"raced again); add problems with `shoparena arena bank add --dir ARENA --n N --seed S` — {when}"
    )


def freshness(arena_dir: Path, config: ArenaConfig, now: datetime, retired: set[str]) -> Freshness:
    """The fresh held-out problems of the rotation in force at `now` (previewed when not frozen yet:
    looking freezes nothing)."""
    manifest, frozen = preview_rotation(arena_dir, config, now, retired=retired)
    bank = read_bank(arena_dir)
    fresh = len(fresh_heldout(manifest, bank, retired))
    needed = config.competition.race_problems
    _period, _starts, ends = period_of(config, now)
    postponed = fresh < needed
    return Freshness(
        period=manifest.period,
        frozen=frozen,
        next_period_at=ends,
        fresh_problems=fresh,
        race_problems=needed,
        races_left=fresh // needed,
        open_problems=len(manifest.open_problem_ids),
        retired_problems=sum(1 for pid in bank.cluster_of if bank.cluster_of[pid] in retired),
        bank_problems=bank.size,
        postponed=postponed,
        reason=postponement(fresh, needed, manifest.period, frozen, ends) if postponed else None,
    )


def arena_freshness(arena, now: datetime) -> Freshness | None:
    """`freshness` of an opened arena (its races table says what is retired); None before the arena has
    a race bank (no competition yet)."""
    if not bank_path(arena.dir).exists():
        return None
    with arena.store.engine.connect() as connection:
        retired = retired_clusters(connection)
    return freshness(arena.dir, arena.config, now, retired)
