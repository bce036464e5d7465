"""The arena (SPEC §6): signed submissions over HTTP, admission, the append-only ledger of submissions,
their status events and validators' results, and the local metagraph.

The server (`shoparena.arena.api.app`) and the client (`shoparena.arena.participants.client`) are imported on use:
opening an arena or reading its ledger needs neither FastAPI nor httpx.
"""

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
