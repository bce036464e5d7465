"""The chain adapter (SPEC §6, issue 13): where a race's weights go and where the metagraph comes from.

`LocalChain` (the default) appends to `ARENA/chain/weights.jsonl` and reads the arena's own
metagraph; `BittensorChain` drives an injected `bittensor.Subtensor` (the `[chain]` extra), with the
SDK's u16 conversion and commit-reveal where the subnet uses it, and records every action in the
same ledger.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.arena.competition.chain.base import ChainAdapter, ChainReceipt
    from shoparena.arena.competition.chain.ledger import (
        LEDGER_FILE,
        LEDGER_SCHEMA,
        ChainLedgerError,
        LedgerEntry,
        WeightLedger,
    )
    from shoparena.arena.competition.chain.local import LocalChain
    from shoparena.arena.competition.chain.subtensor import BittensorChain, ChainError, SyncReject
    from shoparena.arena.competition.chain.u16 import U16_MAX, U16Weights, to_u16

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ChainAdapter": "shoparena.arena.competition.chain.base",
        "ChainReceipt": "shoparena.arena.competition.chain.base",
        "LEDGER_FILE": "shoparena.arena.competition.chain.ledger",
        "LEDGER_SCHEMA": "shoparena.arena.competition.chain.ledger",
        "ChainLedgerError": "shoparena.arena.competition.chain.ledger",
        "LedgerEntry": "shoparena.arena.competition.chain.ledger",
        "WeightLedger": "shoparena.arena.competition.chain.ledger",
        "LocalChain": "shoparena.arena.competition.chain.local",
        "BittensorChain": "shoparena.arena.competition.chain.subtensor",
        "ChainError": "shoparena.arena.competition.chain.subtensor",
        "SyncReject": "shoparena.arena.competition.chain.subtensor",
        "U16_MAX": "shoparena.arena.competition.chain.u16",
        "U16Weights": "shoparena.arena.competition.chain.u16",
        "to_u16": "shoparena.arena.competition.chain.u16",
    },
)

__all__ = [
    "LEDGER_FILE",
    "LEDGER_SCHEMA",
    "U16_MAX",
    "BittensorChain",
    "ChainAdapter",
    "ChainError",
    "ChainLedgerError",
    "ChainReceipt",
    "LedgerEntry",
    "LocalChain",
    "SyncReject",
    "U16Weights",
    "WeightLedger",
    "to_u16",
]
