"""Errors of the arena; each message names the file, key, URL or submission and says what to do."""

from __future__ import annotations


class ArenaError(RuntimeError):
    """Anything the arena refuses to do."""


class ArenaConfigError(ArenaError):
    """An arena directory that is missing, unreadable or inconsistent."""


class KeyFileError(ArenaError):
    """A key file or wallet that cannot give a signing keypair."""


class CodeStoreError(ArenaError):
    """Code storage that cannot store or return a submission's code."""


class NonceStoreUnavailable(ArenaError):
    """The nonce store cannot be reached: requests are refused (503) rather than let replays through."""


class UnknownSubmissionError(ArenaError):
    """A submission id the arena does not hold."""


class ResultConflictError(ArenaError):
    """A result posted again for the same (job, validator) with different content."""


class JobRefused(ArenaError):
    """A validator's request the job layer refuses: `status` is the HTTP status, `error` the
    machine-readable code (no_such_lease, not_your_lease, lease_lapsed, lease_ended, wrong_job,
    bad_result, conflict, bank_changed, catalog_unavailable)."""

    def __init__(self, status: int, error: str, message: str):
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
