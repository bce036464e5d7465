"""The competition's clock in production: one `RaceScheduler` calls `RaceEngine.tick` every period,
run by the server (`arena serve --tick-s`, started and stopped by the app's lifespan) or by a process
of its own (`arena ticker`).

However many servers and workers run, one process ticks at a time, and the database decides which:

- PostgreSQL: a session-level advisory lock keyed by the arena's schema, taken on a connection the
  scheduler keeps to itself. The process that holds it ticks; the others try again each period and
  take over within one period of the holder's death (its session ends, so its lock goes with it).
  Without it two workers reading "no race open" at once under READ COMMITTED would both open one.
- SQLite: no lock is needed, because there is only one writer at a time. Every race step holds the
  database's write lock from its first read and checks the race's state inside that transaction, so
  a second ticker waits, then finds nothing due (or refuses a step already taken); nothing is doubled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from shoparena.arena.competition.bank import bank_path
from shoparena.arena.competition.engine import RaceEngine
from shoparena.arena.errors import ArenaError

log = logging.getLogger("shoparena.race")
TICKER_LOCK_CLASS = 0x53_41_52_54
"""The first key of the ticker's advisory lock ("SART"); the second is the hash of the arena's schema,
so arenas in several schemas of one database each have a ticker."""


class TickerLock:
    """Whether this process may tick now (see the module's docstring for why SQLite needs no lock)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.connection: Connection | None = None

    def held(self) -> bool:
        """True while this process holds the lock: taken when free, kept while its session lives."""
        if self.engine.dialect.name != "postgresql":
            return True
        try:
            if self.connection is not None:
                self.connection.execute(text("SELECT 1"))
                return True
            connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            taken = connection.execute(
                text("SELECT pg_try_advisory_lock(:kind, hashtext(current_schema()))"),
                {"kind": TICKER_LOCK_CLASS},
            ).scalar_one()
        except DBAPIError as exc:  # the session (and with it the lock) is gone: try again next period
            log.warning("races: lost the ticker lock's connection: %s", exc)
            self._drop()
            return False
        if not taken:
            connection.close()
            return False
        self.connection = connection
        log.info("races: process %d holds the ticker lock and ticks the races", os.getpid())
        return True

    def release(self) -> None:
        if self.connection is not None:
            try:
                self.connection.execute(
                    text("SELECT pg_advisory_unlock(:kind, hashtext(current_schema()))"),
                    {"kind": TICKER_LOCK_CLASS},
                )
            except DBAPIError as exc:
                log.warning("races: releasing the ticker lock failed (its session is gone): %s", exc)
            self._drop()

    def _drop(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(DBAPIError):
                self.connection.close()
            self.connection = None


class TickerBusy(ArenaError):
    """Another process holds this arena's ticker lock."""


def tick_once(engine: RaceEngine) -> list[str]:
    """One tick by hand (`arena race tick`, cron) under the same lock as the schedulers, so a manual
    tick never races a running server's ticker into opening or closing a race twice."""
    lock = TickerLock(engine.engine)
    if not lock.held():
        raise TickerBusy(
            "another process holds this arena's ticker lock (a running `arena serve --tick-s` or "
            "`arena ticker`): it ticks the races; nothing was done"
        )
    try:
        done = engine.tick()
        pushed = engine.repush()
        return [*done, pushed] if pushed else done
    finally:
        lock.release()


class RaceScheduler:
    """Ticks `engine` every `period_s` seconds once the arena has a race bank, while this process holds
    the ticker lock, and sets the last race's weights again on their own cadence (`engine.repush`,
    `weights_interval_s`; `period_s` should not exceed it). A failing tick is reported and retried next
    period; it never stops the server."""

    def __init__(self, engine: RaceEngine, period_s: float):
        self.engine = engine
        self.period_s = period_s
        self.lock = TickerLock(engine.engine)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[str]:
        """One period's work: what the engine did (nothing without a bank or the lock)."""
        if not bank_path(self.engine.arena.dir).exists():
            return []
        try:
            if not self.lock.held():
                return []
            done = self.engine.tick()
        except Exception as exc:  # a bad tick must not stop the server; it is retried next period
            log.warning("races: tick failed: %s: %s", type(exc).__name__, exc)
            done = []
        try:
            pushed = self.engine.repush()  # the weights' own cadence, even when the tick failed
        except Exception as exc:
            log.warning("races: setting the weights again failed: %s: %s", type(exc).__name__, exc)
            pushed = None
        if pushed:
            done = [*done, pushed]
        for step in done:
            log.info("races: %s", step)
        return done

    def run(self) -> None:
        """Tick until `stop` is called (the foreground loop of `arena ticker`)."""
        try:
            while not self._stop.wait(self.period_s):
                self.tick()
        finally:
            self.lock.release()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="race scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
