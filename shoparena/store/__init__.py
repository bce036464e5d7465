"""The trajectory store (SPEC §6): canonical trajectory records kept append-only with their provenance,
on SQLite (a file, the default) or PostgreSQL, with idempotent bulk ingest, invalidation rows, filtered
queries and JSONL / Parquet export.
"""

from shoparena.store.engine import ALEMBIC_INI, STORE_ENV, resolve_store_url
from shoparena.store.errors import (
    RecordConflictError,
    StoreError,
    StoreIntegrityError,
    StoreURLError,
    UnknownRecordError,
)
from shoparena.store.export import EXPORT_FORMATS, ExportFormat
from shoparena.store.ingest import IngestReport
from shoparena.store.query import RecordFilter
from shoparena.store.rejects import REASONS, Reject
from shoparena.store.store import InvalidationInfo, StoreStats, TrajectoryStore, open_store

__all__ = [
    "ALEMBIC_INI",
    "EXPORT_FORMATS",
    "REASONS",
    "STORE_ENV",
    "ExportFormat",
    "IngestReport",
    "InvalidationInfo",
    "RecordConflictError",
    "RecordFilter",
    "Reject",
    "StoreError",
    "StoreIntegrityError",
    "StoreStats",
    "StoreURLError",
    "TrajectoryStore",
    "UnknownRecordError",
    "open_store",
    "resolve_store_url",
]
