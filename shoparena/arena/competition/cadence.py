"""Weights on a cadence (issue 23): the last complete race's consensus vector is set on the chain
again every `weights_interval_s`, not only when a race closes, so a validator never ages out of the
chain's activity window between daily races (SN15's validators set weights every 300 s).

A failed push is retried with a doubling backoff (from `RETRY_BASE_S`, capped at the interval) and
stays visible: the state lives in `weights_push.json` in the arena directory, written by whichever
process pushed (the server's ticker, `arena race tick`), read by `arena status`.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

PUSH_FILE = "weights_push.json"
RETRY_BASE_S = 10.0


class WeightPushStatus(BaseModel):
    """The newest weight pushes of this arena, as `arena status` shows them."""

    race_id: str | None = None
    """The race whose consensus vector was pushed last."""
    last_attempt_at: datetime | None = None
    last_success_at: datetime | None = None
    failures: int = 0
    """Failed pushes in a row (0: the last one went through)."""
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    """When the cadence pushes again: the interval after a success, the backoff after a failure."""


def read_push_status(arena_dir: str | os.PathLike) -> WeightPushStatus | None:
    path = Path(arena_dir) / PUSH_FILE
    if not path.exists():
        return None
    try:
        return WeightPushStatus.model_validate_json(path.read_bytes())
    except ValueError:
        return None  # a torn or foreign file: the next push rewrites it


def record_push(
    arena_dir: str | os.PathLike,
    race_id: str | None,
    now: datetime,
    interval_s: float,
    error: str | None = None,
) -> WeightPushStatus:
    """Record one push's outcome and schedule the next (atomically replaced, so a reader never sees
    half a file)."""
    before = read_push_status(arena_dir) or WeightPushStatus()
    if error is None:
        status = WeightPushStatus(
            race_id=race_id,
            last_attempt_at=now,
            last_success_at=now,
            next_attempt_at=now + timedelta(seconds=interval_s) if interval_s > 0 else None,
        )
    else:
        failures = before.failures + 1
        backoff = RETRY_BASE_S * 2 ** (failures - 1)
        if interval_s > 0:
            backoff = min(backoff, interval_s)
        status = WeightPushStatus(
            race_id=race_id,
            last_attempt_at=now,
            last_success_at=before.last_success_at,
            failures=failures,
            last_error=error[:500],
            next_attempt_at=now + timedelta(seconds=backoff),
        )
    path = Path(arena_dir) / PUSH_FILE
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(status.model_dump_json(indent=2))
    partial.replace(path)
    return status


def push_due(arena_dir: str | os.PathLike, now: datetime, interval_s: float) -> bool:
    """Whether the cadence pushes now: never with `interval_s` 0 (only at close) unless a failed push
    awaits its retry; otherwise once `next_attempt_at` has come (or nothing was ever pushed)."""
    status = read_push_status(arena_dir)
    if status is None:
        return interval_s > 0
    if status.next_attempt_at is None:
        return False
    return now >= status.next_attempt_at
