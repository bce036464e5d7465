"""The arena (SPEC §6): signed submissions over HTTP, admission, the append-only ledger of submissions,
their status events and validators' results, and the local metagraph.

The server (`shoparena.arena.api.app`) and the client (`shoparena.arena.participants.client`) are imported on use:
opening an arena or reading its ledger needs neither FastAPI nor httpx.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.arena.arena import Arena, init_arena, open_arena
    from shoparena.arena.auth.metagraph import Metagraph
    from shoparena.arena.config import ArenaConfig
    from shoparena.arena.errors import (
        ArenaConfigError,
        ArenaError,
        CodeStoreError,
        KeyFileError,
        NonceStoreUnavailable,
        ResultConflictError,
        UnknownSubmissionError,
    )
    from shoparena.arena.ledger import Cooldown, CooldownActive, CooldownPolicy, SubmissionLedger
    from shoparena.arena.models import (
        NeuronInfo,
        ProblemResultIn,
        ResultIn,
        ResultView,
        SubmissionStatus,
        SubmissionView,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Arena": "shoparena.arena.arena",
        "init_arena": "shoparena.arena.arena",
        "open_arena": "shoparena.arena.arena",
        "Metagraph": "shoparena.arena.auth.metagraph",
        "ArenaConfig": "shoparena.arena.config",
        "ArenaConfigError": "shoparena.arena.errors",
        "ArenaError": "shoparena.arena.errors",
        "CodeStoreError": "shoparena.arena.errors",
        "KeyFileError": "shoparena.arena.errors",
        "NonceStoreUnavailable": "shoparena.arena.errors",
        "ResultConflictError": "shoparena.arena.errors",
        "UnknownSubmissionError": "shoparena.arena.errors",
        "Cooldown": "shoparena.arena.ledger",
        "CooldownActive": "shoparena.arena.ledger",
        "CooldownPolicy": "shoparena.arena.ledger",
        "SubmissionLedger": "shoparena.arena.ledger",
        "NeuronInfo": "shoparena.arena.models",
        "ProblemResultIn": "shoparena.arena.models",
        "ResultIn": "shoparena.arena.models",
        "ResultView": "shoparena.arena.models",
        "SubmissionStatus": "shoparena.arena.models",
        "SubmissionView": "shoparena.arena.models",
    },
)

__all__ = [
    "Arena",
    "ArenaConfig",
    "ArenaConfigError",
    "ArenaError",
    "CodeStoreError",
    "Cooldown",
    "CooldownActive",
    "CooldownPolicy",
    "KeyFileError",
    "Metagraph",
    "NeuronInfo",
    "NonceStoreUnavailable",
    "ProblemResultIn",
    "ResultConflictError",
    "ResultIn",
    "ResultView",
    "SubmissionLedger",
    "SubmissionStatus",
    "SubmissionView",
    "UnknownSubmissionError",
    "init_arena",
    "open_arena",
]
