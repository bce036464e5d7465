"""Errors of the trajectory store; each message names the record or URL and says what to do."""

from __future__ import annotations


class StoreError(RuntimeError):
    """Anything the store refuses to do."""


class StoreURLError(StoreError):
    """A `--store` value that names no database we can open."""


class RecordConflictError(StoreError):
    """A record whose id is stored already with different content: the store never overwrites."""

    def __init__(self, record_id: str, stored_sha256: str, new_sha256: str, source: str | None = None):
        where = f"{source}: " if source else ""
        super().__init__(
            f"{where}record {record_id} is already stored with different content "
            f"(stored sha256 {stored_sha256[:12]}…, new {new_sha256[:12]}…); the store is append-only — "
            "give the new run its own run_id, or invalidate the old record and store the new one under a new id"
        )
        self.record_id = record_id
        self.stored_sha256 = stored_sha256
        self.new_sha256 = new_sha256


class UnknownRecordError(StoreError):
    """An operation naming a record id that the store does not hold."""


class StoreIntegrityError(StoreError):
    """A stored record whose content no longer matches its content hash."""
