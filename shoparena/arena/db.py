"""Writing to the arena's database from many server threads.

On SQLite every writer takes the one write lock; writers that meet it wait in SQLite's busy handler,
whose back-off sleeps (1, 2, 5 … 100 ms) cost far more than the sub-millisecond transactions they wait
for. So within a process the arena's writers queue on a lock of their own first and reach SQLite one
at a time; other processes still wait on SQLite's lock. PostgreSQL needs none of this.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine

from shoparena.store.engine import write_transaction

_LOCKS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def _lock(engine: Engine) -> threading.Lock:
    with _GUARD:
        lock = _LOCKS.get(engine)
        if lock is None:
            lock = _LOCKS[engine] = threading.Lock()
        return lock


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A read-then-write transaction (the store's `write_transaction`), one per process at a time on
    SQLite."""
    if engine.dialect.name != "sqlite":
        with write_transaction(engine) as connection:
            yield connection
        return
    with _lock(engine), write_transaction(engine) as connection:
        yield connection


def as_utc(value: datetime) -> datetime:
    """A timestamp read back from the state database as an aware UTC datetime: SQLite returns the naive
    UTC value it stored, PostgreSQL an aware one."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
