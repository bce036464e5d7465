"""The season's simulated clock: one instant that the server (its signed-request skew check, the job
board's leases, the ledger's timestamps), the race engine and every client read.

It stands still until the season driver moves it, so a season is a pure function of its seed: nothing
the arena records depends on how long the machine took. Leases cannot lapse while it stands still
(heartbeats are still sent), which is what a simulation of an honest network wants.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

SEASON_EPOCH = datetime(2026, 3, 2, 16, 0, tzinfo=UTC)
"""Day 1 starts here: a Monday, 08:00 in America/Los_Angeles (before the 12:00 code release)."""


class SimClock:
    """Unix seconds, moved only by `set`/`advance` (never backwards)."""

    def __init__(self, start: datetime = SEASON_EPOCH):
        self._now = start.timestamp()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def now(self) -> datetime:
        return datetime.fromtimestamp(self(), UTC)

    def set(self, when: datetime) -> None:
        with self._lock:
            target = when.timestamp()
            if target < self._now:
                raise ValueError(f"the season clock does not go back ({when.isoformat()} is past)")
            self._now = target

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the season clock does not go back")
        with self._lock:
            self._now += seconds
