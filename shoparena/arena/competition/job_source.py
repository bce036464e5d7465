"""The competition as the job layer's `JobSource` (`arena.jobs.source`): the race bank's file says
whether the competition is on, its problems are what qualifying and race jobs pin, and a submission's
qualifying problems are drawn from the open partition of a rotation (`pools`), which never holds a
retired (raced) leak cluster.

The app, the race engine and the operator's view inject it into their `JobBoard`, so the gate never
imports the competition.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine

from shoparena.arena.competition.bank import bank_path, read_bank
from shoparena.arena.competition.freshness import retired_clusters
from shoparena.arena.competition.models import RotationManifest
from shoparena.arena.competition.pools import (
    frozen_periods,
    period_of,
    period_starts_at,
    qualifying_problems,
    rotation_at,
)
from shoparena.arena.config import ArenaConfig
from shoparena.arena.errors import JobRefused
from shoparena.problems.models import Problem


class CompetitionJobSource:
    """The qualifying and race problems of the arena in `arena_dir` (thread-safe); `database` is the
    arena's (its races table says which leak clusters are retired when a rotation is frozen)."""

    def __init__(self, arena_dir: Path, config: ArenaConfig, database: Engine):
        self.arena_dir = Path(arena_dir)
        self.config = config
        self.database = database
        self._lock = threading.Lock()
        self._rotations: dict[int, RotationManifest] = {}

    def competition_on(self) -> bool:
        """The arena runs the competition once it has a race bank (`arena bank add`)."""
        return bank_path(self.arena_dir).exists()

    def race_problems(self) -> Mapping[str, Problem]:
        """The race bank's problems by id (`read_bank` re-reads the file only when it changes)."""
        return read_bank(self.arena_dir).by_id

    def competition_start(self, now: datetime) -> int:
        """The competition's first rotation period: the lowest period frozen in `ARENA/rotations/`, else
        (no draw was ever made) the period in force `now`, which the first qualifying or race draw
        freezes. The arena never freezes a period below it later — qualifying draws use this period or a
        later one, races the period of their own `now` — so once frozen it does not change."""
        periods = frozen_periods(self.arena_dir)
        return periods[0] if periods else period_of(self.config, now)[0]

    def qualifying_period(self, submitted_at: datetime, start: int) -> int:
        """The rotation period a submission qualifies on: the one in force when it was submitted, or the
        competition's first period (`start`, see `competition_start`) when it was submitted before that.

        A submission from before the competition (the arena had no race bank yet: it was evaluated on
        the arena's own bank, or it waited in the queue) is treated as if it had been submitted when the
        competition started, so it qualifies on what a submission made then qualifies on. Not on the
        period of its submission time:
        - that period had no rotation; making one now would freeze, after the fact, a partition of
          today's bank for a period that never had a bank, possibly many periods back;
        - the miner chose its submission time, so it would choose a partition nobody submitting under
          the competition can get (submitting before the bank must buy nothing).
        Not on the period in force when a validator first claims it either: claims happen at any time,
        and a retry or a second validator in a later period would get another job. `start` is durable
        and public (a frozen manifest: first writer wins, never rewritten), so the period, hence the
        job id, is the same for every validator and every retry, whenever they claim.

        A submission made under the competition keeps its own period, except when nothing was drawn
        (no claim, no race) in the period the race bank arrived in: the bank's file holds no time, so
        the first frozen period stands for its arrival, and such a submission qualifies on that one."""
        return max(period_of(self.config, submitted_at)[0], start)

    def qualifying_validators(self, registered: int) -> int:
        """The qualifying quorum (`qualifying.qualifying_quorum`), at most the validators there are: a
        job never waits for a validator that does not exist."""
        from shoparena.arena.competition.qualifying import qualifying_quorum

        quorum, _single = qualifying_quorum(self.config.competition, registered)
        return max(1, min(quorum, registered))

    def qualifying_problem_ids(self, submission_id: str, submitted_at: datetime, start: int) -> list[str]:
        """A submission's qualifying problems: the open partition of the rotation of its
        `qualifying_period`, drawn from its id, so every validator and every retry gets the same."""
        period = self.qualifying_period(submitted_at, start)
        with self._lock:
            manifest = self._rotations.get(period)
        if manifest is None:
            with self.database.connect() as connection:
                retired = retired_clusters(connection)
            at = period_starts_at(self.config, period)
            manifest = rotation_at(self.arena_dir, self.config, at, retired=retired)
            with self._lock:
                self._rotations[period] = manifest  # frozen once written: safe to keep
        problem_ids = qualifying_problems(
            manifest, read_bank(self.arena_dir), submission_id, self.config.competition.qualifying_problems
        )
        if not problem_ids:
            raise JobRefused(
                503,
                "no_open_problems",
                f"rotation period {manifest.period} has no open problems to qualify on; grow the race bank "
                "(`shoparena arena bank add`)",
            )
        return problem_ids
