"""Opening a store: `--store` values to SQLAlchemy URLs, engines tuned per dialect, migrations on open."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from shoparena.store.errors import StoreURLError

STORE_ENV = "SHOPARENA_STORE"
DEFAULT_STORE_FILE = "shoparena.db"
ALEMBIC_INI = str(resources.files("shoparena.store") / "alembic.ini")
MIGRATIONS = "shoparena.store:migrations"
SUPPORTED_DIALECTS = ("sqlite", "postgresql")


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


def make_engine(store: str | os.PathLike | None = None, **options: Any) -> Engine:
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
    engine = create_engine(
        url, json_serializer=_dump_json, json_deserializer=orjson.loads, future=True, **options
    )
    if dialect == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Foreign keys on (invalidations must name a stored record); WAL so readers never block the writer."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def alembic_config(connection: Any = None):
    from alembic.config import Config

    config = Config(ALEMBIC_INI)
    config.set_main_option("script_location", MIGRATIONS)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade_to_head(engine: Engine) -> None:
    """Bring the schema to the newest revision (a no-op when it is there already)."""
    from alembic import command

    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "head")


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
