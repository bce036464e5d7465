"""The default chain: no blockchain, only the arena's append-only ledger and its local metagraph.

A self-hosted arena still has to say, verifiably and after the fact, what each race paid; the ledger
is that record, and it holds the same u16 values a subnet would, so moving to Bittensor changes where
the weights go, not what they are.
"""

from __future__ import annotations

import os
from pathlib import Path

from shoparena.arena.auth.metagraph import Metagraph
from shoparena.arena.competition.chain.base import ChainReceipt
from shoparena.arena.competition.chain.ledger import LEDGER_FILE, LedgerEntry, WeightLedger
from shoparena.arena.competition.models import WeightVector
from shoparena.arena.models import NeuronInfo


class LocalChain:
    """`LocalChain(arena.dir, arena.metagraph)`: weights to `ARENA/chain/weights.jsonl`."""

    name = "local"

    def __init__(self, arena_dir: str | os.PathLike, metagraph: Metagraph | None = None):
        self.arena_dir = Path(arena_dir)
        self.metagraph = metagraph
        self.ledger = WeightLedger(self.arena_dir / LEDGER_FILE)

    def sync_metagraph(self) -> list[NeuronInfo]:
        """The arena's own metagraph (`arena register` keeps it); nothing to fetch."""
        return self.metagraph.all() if self.metagraph is not None else []

    def set_weights(self, vector: WeightVector) -> ChainReceipt:
        return ChainReceipt.of(self.ledger.append(vector, chain=self.name, action="set"))

    def history(self) -> list[LedgerEntry]:
        """Every entry of the ledger, validated (`ChainLedgerError` names a bad line)."""
        return self.ledger.entries()
