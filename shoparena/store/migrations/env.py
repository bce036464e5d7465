"""Alembic environment for the trajectory store.

`open_store()` runs it in-process on the store's own connection (`config.attributes["connection"]`).
Run by hand it takes the database from `alembic -x store=URL`, the ini's `sqlalchemy.url`, or
`SHOPARENA_STORE` (a plain path means a SQLite file), e.g.
`alembic -c "$(python -c 'import shoparena.store as s; print(s.ALEMBIC_INI)')" -x store=db.sqlite upgrade head`.
"""

from __future__ import annotations

from alembic import context

from shoparena.store.engine import make_engine, resolve_store_url
from shoparena.store.schema import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    given = context.get_x_argument(as_dictionary=True).get("store") or config.get_main_option(
        "sqlalchemy.url"
    )
    return resolve_store_url(given or None)


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
