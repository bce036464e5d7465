"""What the race engine talks to when it pays a race: a `ChainAdapter`, local or a Bittensor subnet."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from shoparena.arena.competition.chain.ledger import Action, LedgerEntry
from shoparena.arena.competition.models import WeightVector
from shoparena.arena.models import NeuronInfo


class ChainReceipt(BaseModel):
    """The outcome of one `set_weights`: what was pushed, as which u16 values, and whether the chain
    took it. `ledger_seq` is the line of `ARENA/chain/weights.jsonl` that records it."""

    chain: str
    action: Action
    race_id: str | None
    uids: list[int]
    weights: list[float]
    u16_uids: list[int]
    u16_values: list[int]
    at: datetime
    success: bool
    message: str = ""
    netuid: int | None = None
    ledger_seq: int

    @classmethod
    def of(cls, entry: LedgerEntry) -> ChainReceipt:
        return cls(
            chain=entry.chain,
            action=entry.action,
            race_id=entry.race_id,
            uids=entry.uids,
            weights=entry.weights,
            u16_uids=entry.u16_uids,
            u16_values=entry.u16_values,
            at=entry.at,
            success=entry.success,
            message=entry.message,
            netuid=entry.netuid,
            ledger_seq=entry.seq,
        )


class ChainAdapter(Protocol):
    """Where weights go and where the metagraph comes from."""

    @property
    def name(self) -> str: ...

    def sync_metagraph(self) -> list[NeuronInfo]:
        """The neurons (hotkey, role, stake, uid) the arena should know, as the chain sees them."""
        ...

    def set_weights(self, vector: WeightVector) -> ChainReceipt:
        """Push one weight vector; every push is also appended to the local ledger."""
        ...
