"""The local metagraph: which hotkeys may call the arena, and as what.

`arena register` edits it by hand; the chain adapter (next issue) can fill it from the subnet instead.
The server reads it on every request, so a registration takes effect at once, without a restart.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from sqlalchemy import Engine, delete, insert, select, update

from shoparena.arena.errors import ArenaError
from shoparena.arena.keys import canonical_hotkey
from shoparena.arena.models import ROLES, NeuronInfo
from shoparena.arena.schema import Neuron
from shoparena.store.engine import write_transaction

NEURONS = Neuron.__table__


class Metagraph:
    def __init__(self, engine: Engine):
        self.engine = engine

    def register(
        self, hotkey: str, role: str, stake: float = 0.0, *, uid: int | None = None, source: str = "local"
    ) -> NeuronInfo:
        """Add the hotkey, or change its role/stake if registered already."""
        try:
            hotkey = canonical_hotkey(hotkey)
        except ValueError as exc:
            raise ArenaError(f"--hotkey: {exc}") from None
        if role not in ROLES:
            raise ArenaError(f"--role {role!r}: use one of {', '.join(ROLES)}")
        if not math.isfinite(stake) or stake < 0:
            raise ArenaError(f"--stake {stake}: stake is a finite number ≥ 0")
        values = {
            "role": role,
            "stake": float(stake),
            "uid": uid,
            "source": source,
            "updated_at": datetime.now(UTC),
        }
        with write_transaction(self.engine) as connection:
            known = connection.execute(select(NEURONS.c.hotkey).where(NEURONS.c.hotkey == hotkey)).first()
            if known is None:
                connection.execute(insert(NEURONS).values(hotkey=hotkey, **values))
            else:
                connection.execute(update(NEURONS).where(NEURONS.c.hotkey == hotkey).values(**values))
        return NeuronInfo(hotkey=hotkey, **values)

    def remove(self, hotkey: str) -> bool:
        with write_transaction(self.engine) as connection:
            return connection.execute(delete(NEURONS).where(NEURONS.c.hotkey == hotkey)).rowcount == 1

    def get(self, hotkey: str) -> NeuronInfo | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(NEURONS).where(NEURONS.c.hotkey == hotkey)).first()
        return NeuronInfo(**row._asdict()) if row is not None else None

    def all(self) -> list[NeuronInfo]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(NEURONS).order_by(NEURONS.c.role, NEURONS.c.hotkey)).all()
        return [NeuronInfo(**row._asdict()) for row in rows]
