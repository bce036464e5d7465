"""The trajectory store (SPEC §6): canonical trajectory records kept append-only with their provenance,
on SQLite (a file, the default) or PostgreSQL, with idempotent bulk ingest, invalidation rows, filtered
queries and JSONL / Parquet export.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ALEMBIC_INI": "shoparena.store.engine",
        "STORE_ENV": "shoparena.store.engine",
        "resolve_store_url": "shoparena.store.engine",
        "RecordConflictError": "shoparena.store.errors",
        "StoreError": "shoparena.store.errors",
        "StoreIntegrityError": "shoparena.store.errors",
        "StoreURLError": "shoparena.store.errors",
        "UnknownRecordError": "shoparena.store.errors",
        "EXPORT_FORMATS": "shoparena.store.export",
        "ExportFormat": "shoparena.store.export",
        "IngestReport": "shoparena.store.ingest",
        "RecordFilter": "shoparena.store.query",
        "REASONS": "shoparena.store.rejects",
        "Reject": "shoparena.store.rejects",
        "InvalidationInfo": "shoparena.store.store",
        "StoreStats": "shoparena.store.store",
        "TrajectoryStore": "shoparena.store.store",
        "open_store": "shoparena.store.store",
    },
)

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
