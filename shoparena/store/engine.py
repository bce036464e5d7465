"""Opening a store: `--store` values to SQLAlchemy URLs, engines tuned per dialect, migrations on open."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from shoparena.store.errors import StoreURLError

STORE_ENV = "SHOPARENA_STORE"
DEFAULT_STORE_FILE = "shoparena.db"
ALEMBIC_INI = str(resources.files("shoparena.store") / "alembic.ini")
MIGRATIONS = "shoparena.store:migrations"
SUPPORTED_DIALECTS = ("sqlite", "postgresql")
WRITE_OPTION = "shoparena_store_write"
_ALEMBIC_LOCK = threading.Lock()
"""Alembic keeps its running context in module globals: one migration at a time per process."""
MIGRATION_LOCK_KEY = 0x5E0A_2E4A
"""PostgreSQL advisory lock id held while migrating (any fixed 64-bit number unique to shoparena)."""


class CanonicalJSON(str):
    """A record already serialised in its canonical form: written to the JSON column byte for byte.

    Serialising once (for the content hash) and handing the same text to the database is what lets a
    SQLite export return exactly the ingested bytes, and saves a second encode per record.
    """


def _dump_json(value: Any) -> str:
    if isinstance(value, CanonicalJSON):
        return str(value)
    return orjson.dumps(value).decode()


def resolve_store_url(store: str | os.PathLike | None = None) -> str:
    """`store`, else $SHOPARENA_STORE, else ./shoparena.db; a plain path is a SQLite file.

    `postgresql://` and `postgres://` URLs get the psycopg (3) driver, the one shoparena depends on.
    """
    value = os.fspath(store) if store is not None else os.environ.get(STORE_ENV) or DEFAULT_STORE_FILE
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().resolve()}"
    scheme, rest = value.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return value


def make_engine(store: str | os.PathLike | None = None, *, create: bool = True, **options: Any) -> Engine:
    """An engine for `store`; `create=False` refuses a SQLite file that does not exist yet (SQLite would
    make an empty one, so a mistyped path read as an empty store instead of failing)."""
    url_text = resolve_store_url(store)
    try:
        url = make_url(url_text)
    except ArgumentError as exc:
        raise StoreURLError(f"--store {url_text!r} is not a database URL or a file path ({exc})") from exc
    dialect = url.get_backend_name()
    if dialect not in SUPPORTED_DIALECTS:
        raise StoreURLError(
            f"--store {url.render_as_string(hide_password=True)}: the store runs on SQLite (a file path or "
            "sqlite:///path.db) or PostgreSQL (postgresql://user@host/db), not on " + dialect
        )
    if dialect == "sqlite" and url.database not in (None, "", ":memory:"):
        parent = Path(url.database).parent
        if not parent.is_dir():
            raise StoreURLError(f"--store {url_text}: directory {parent} does not exist")
        if Path(url.database).is_dir():
            raise StoreURLError(f"--store {url.database} is a directory; give the store's SQLite file")
        if not create and not Path(url.database).exists():
            raise StoreURLError(
                f"--store {url.database}: no such store (the file does not exist); check the path, "
                "or create the store with `shoparena store ingest`"
            )
    engine = create_engine(
        url, json_serializer=_dump_json, json_deserializer=orjson.loads, future=True, **options
    )
    if dialect == "sqlite":
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    """Wait for locks rather than fail; big pages for ~10 KB rows (new files only); WAL so readers never
    block the writer; foreign keys on (invalidations must name a stored record).

    The driver's own transaction handling is switched off (it would begin only before DML, leaving
    lookups and DDL outside the transaction): `_sqlite_begin` issues BEGIN itself.
    """
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.execute("PRAGMA page_size=16384")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    """Writers take the write lock when they begin, so a transaction that reads then writes (the ingest
    lookup, a migration) never finds its snapshot stale and fails with "database is locked"."""
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A read-then-write transaction: on SQLite it holds the write lock from its start."""
    with engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        with connection.begin():
            yield connection


def alembic_config(connection: Any = None, migrations: str = MIGRATIONS):
    """`migrations`: the script location (the store's, or another stage's sharing this database)."""
    from alembic.config import Config

    config = Config(ALEMBIC_INI)
    config.set_main_option("script_location", migrations)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade_to_head(engine: Engine, migrations: str = MIGRATIONS) -> None:
    """Bring the schema to the newest revision (a no-op when it is there already).

    Safe when several processes open a new store at once: SQLite serialises them on its write lock,
    PostgreSQL on a transaction-scoped advisory lock, and each then finds what the first one made.
    """
    from alembic import command

    with _ALEMBIC_LOCK, write_transaction(engine) as connection:
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        command.upgrade(alembic_config(connection, migrations), "head")


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
