"""The local metagraph: which hotkeys may call the arena, and as what.

`arena register` edits it by hand; the chain adapter (next issue) can fill it from the subnet instead.
The server looks every request's hotkey up here. With `cache_s` > 0 the whole table (a subnet has at
most a few hundred neurons) is kept in memory for that long, so a lookup costs no query; a change made
through the same `Metagraph` applies at once, one made by another process (`arena register` while the
server runs) within `cache_s`.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, delete, insert, select, update

from shoparena.arena.auth.keys import canonical_hotkey
from shoparena.arena.db import writing
from shoparena.arena.errors import ArenaError
from shoparena.arena.models import ROLES, NeuronInfo
from shoparena.arena.tables import NEURONS


class Metagraph:
    def __init__(self, engine: Engine, cache_s: float = 0.0, burn_uid: int | None = 0):
        self.engine = engine
        self.burn_uid = burn_uid
        """The uid every unearned weight burns to: it never names a miner (issue 23), since a miner
        crowned there could only be paid into the burn."""
        self.cache_s = cache_s
        self._lock = threading.Lock()
        self._cache: dict[str, NeuronInfo] | None = None
        self._loaded_at = 0.0

    def register(
        self, hotkey: str, role: str, stake: float = 0.0, *, uid: int | None = None, source: str = "local"
    ) -> NeuronInfo:
        """Add the hotkey, or change its role/stake if registered already.

        A uid names one hotkey, as on the chain: a uid that another hotkey holds is refused for a local
        registration (weights are set per uid, so two racers on one uid cannot both be paid), and taken
        over for a chain sync (the chain gave the uid to a new hotkey; the old one holds no uid now)."""
        try:
            hotkey = canonical_hotkey(hotkey)
        except ValueError as exc:
            raise ArenaError(f"--hotkey: {exc}") from None
        if role not in ROLES:
            raise ArenaError(f"--role {role!r}: use one of {', '.join(ROLES)}")
        if not math.isfinite(stake) or stake < 0:
            raise ArenaError(f"--stake {stake}: stake is a finite number ≥ 0")
        if role == "miner" and uid is not None and uid == self.burn_uid:
            raise ArenaError(
                f"--uid {uid} is the burn uid (competition.burn_uid): every unearned weight goes there, so "
                "no miner may hold it; give this miner another uid"
            )
        values = {
            "role": role,
            "stake": float(stake),
            "uid": uid,
            "source": source,
            "updated_at": datetime.now(UTC),
        }
        with writing(self.engine) as connection:
            if uid is not None:
                others = NEURONS.c.uid == uid, NEURONS.c.hotkey != hotkey
                holder = connection.execute(select(NEURONS.c.hotkey).where(*others)).first()
                if holder is not None and source != "chain":
                    raise ArenaError(
                        f"--uid {uid} belongs to {holder.hotkey}: a uid names one hotkey (deregister that "
                        "one first with `arena register --remove`, or give this one another uid)"
                    )
                if holder is not None:
                    connection.execute(
                        update(NEURONS).where(*others).values(uid=None, updated_at=values["updated_at"])
                    )
            known = connection.execute(select(NEURONS.c.hotkey).where(NEURONS.c.hotkey == hotkey)).first()
            if known is None:
                connection.execute(insert(NEURONS).values(hotkey=hotkey, **values))
            else:
                connection.execute(update(NEURONS).where(NEURONS.c.hotkey == hotkey).values(**values))
        self._invalidate()
        return NeuronInfo(hotkey=hotkey, **values)

    def remove(self, hotkey: str) -> bool:
        with writing(self.engine) as connection:
            removed = connection.execute(delete(NEURONS).where(NEURONS.c.hotkey == hotkey)).rowcount == 1
        self._invalidate()
        return removed

    def _invalidate(self) -> None:
        with self._lock:
            self._cache = None

    def get(self, hotkey: str) -> NeuronInfo | None:
        if self.cache_s <= 0:
            with self.engine.connect() as connection:
                row = connection.execute(select(NEURONS).where(NEURONS.c.hotkey == hotkey)).first()
            return NeuronInfo(**row._asdict()) if row is not None else None
        with self._lock:
            if self._cache is None or time.monotonic() - self._loaded_at > self.cache_s:
                self._cache = {neuron.hotkey: neuron for neuron in self.all()}
                self._loaded_at = time.monotonic()
            return self._cache.get(hotkey)

    def all(self, connection: Connection | None = None) -> list[NeuronInfo]:
        """Every registered neuron. A caller that holds a connection passes it: taking a second one
        from the pool while holding the first deadlocks a busy server once every pooled connection is
        held by a request waiting for its second."""
        if connection is None:
            with self.engine.connect() as fresh:
                return self.all(fresh)
        rows = connection.execute(select(NEURONS).order_by(NEURONS.c.role, NEURONS.c.hotkey)).all()
        return [NeuronInfo(**row._asdict()) for row in rows]
