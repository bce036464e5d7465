"""A cache for the competition's public reads (`CompetitionView`), keyed on the version of the data
each read depends on, so an answer is reused while nothing it reads has changed and recomputed the
moment anything has: no expiry time, never stale.

The version (`data_version`) is read in the same database snapshot the answer is computed in (see
`CompetitionView._snapshot`), and is made of:

- for each append-only table the read depends on, its row count and its largest id. The arena's tables
  refuse UPDATE, DELETE and TRUNCATE (database triggers, migrations arena_0001–0003), so the rows a
  snapshot sees only ever grow, and snapshots are nested: a later one sees every row an earlier one saw.
  Two snapshots with the same count therefore see the same rows. The count is what makes this exact on
  PostgreSQL, where an id is drawn when a row is inserted, not when it commits: a transaction holding
  id 10 may commit after one holding id 11, and the largest id would not move. (On SQLite, with its one
  writer, the largest id alone would do.) A count reads the table (SQLite counts b-tree cells,
  PostgreSQL scans), well below what the answers themselves read: every qualifying result, every entry.
- for the one mutable table the competition reads, `neurons` (the metagraph, replaced by a chain sync
  or edited by `arena register`), the columns the reads use, every row of them: (hotkey, role, stake,
  uid). A subnet has at most a few hundred neurons, so this is a small read; comparing contents, not an
  `updated_at`, also holds when a row is changed and changed back, or written on a clock that went back.

What an answer depends on outside the database (the configuration) goes into its key beside the
version; an answer that depended on the clock could not be cached this way (the cached ones do not:
see `CompetitionView.leaderboard` and `races` for each one's inputs).

`ReadCache` holds the answers: a small LRU (bounded memory), thread-safe, and single-flight: while one
thread computes the answer for a key, the others asking for the same key wait for it (holding no
database connection) instead of computing it again, so a flood arriving just after a write costs one
computation, not one per request.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, Table, func, select

from shoparena.arena.tables import NEURONS

NEURON_COLUMNS = (NEURONS.c.hotkey, NEURONS.c.role, NEURONS.c.stake, NEURONS.c.uid)
"""What the competition reads of a neuron (`RaceEngine._stakes`, `_uids`, `qualifiers`)."""
NEURON_ROWS = select(*NEURON_COLUMNS).order_by(NEURONS.c.hotkey)


@functools.cache
def _counts(tables: tuple[Table, ...]) -> Select:
    """One statement (one snapshot on any isolation level, one round trip): each table's row count and
    largest id. Built once per tuple of tables: building it costs more than running it."""
    columns = []
    for table in tables:
        columns.append(select(func.count()).select_from(table).scalar_subquery())
        columns.append(select(func.max(table.c.id)).scalar_subquery())
    return select(*columns)


def data_version(connection: Connection, tables: Sequence[Table], neurons: bool) -> tuple:
    """The version of `tables` (append-only, each with an `id` column) and, with `neurons`, of the
    metagraph, as `connection`'s snapshot sees them: equal versions, equal data (see the module)."""
    version: tuple = tuple(connection.execute(_counts(tuple(tables))).one())
    if neurons:
        version += (tuple(tuple(row) for row in connection.execute(NEURON_ROWS)),)
    return version


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    waits: int
    """Requests that found the answer being computed by another thread and waited for it."""
    entries: int


HIT, COMPUTE, WAIT = "hit", "compute", "wait"


class ReadCache:
    """Answers by key, at most `max_entries` of them (least recently used goes first; 0 keeps none).

    `claim(key)` says what the caller does: (HIT, answer); (COMPUTE, None): compute it, then `fill` or
    `fail` the key (exactly one of them, always); (WAIT, future): another thread is computing it,
    `future.result()` is its answer (or raises its exception)."""

    def __init__(self, max_entries: int = 32):
        if max_entries < 0:
            raise ValueError("max_entries must be ≥ 0")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._pending: dict[Hashable, Future] = {}
        self._hits = self._misses = self._waits = 0

    def claim(self, key: Hashable) -> tuple[str, Any]:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self._hits += 1
                return HIT, self._entries[key]
            pending = self._pending.get(key)
            if pending is not None:
                self._waits += 1
                return WAIT, pending
            self._pending[key] = Future()
            self._misses += 1
            return COMPUTE, None

    def fill(self, key: Hashable, answer: Any, keep: bool = True) -> None:
        """The claimed key's answer: handed to its waiters, and kept unless `keep` is False."""
        with self._lock:
            future = self._pending.pop(key)
            if keep and self.max_entries:
                self._entries[key] = answer
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        future.set_result(answer)

    def fail(self, key: Hashable, exc: BaseException) -> None:
        """Computing the claimed key raised `exc`: its waiters raise it too; nothing is kept."""
        with self._lock:
            future = self._pending.pop(key)
        future.set_exception(exc)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._waits, len(self._entries))
