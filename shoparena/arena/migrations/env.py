"""Alembic environment for the arena's tables (run in-process by `open_state`, on its own connection).

The arena shares its database with the trajectory store, so its revisions are tracked in a version
table of their own (`arena_alembic_version`) and autogenerate looks at the arena's models only.
"""

from __future__ import annotations

from alembic import context

from shoparena.arena.schema import VERSION_TABLE, Base

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes["connection"]
    context.configure(connection=connection, target_metadata=Base.metadata, version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
