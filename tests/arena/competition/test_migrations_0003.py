"""arena_0003 (the competition) on SQLite and the real PostgreSQL, at the database level (SQL, not the
ORM): its five tables refuse UPDATE, DELETE and TRUNCATE; downgrading to arena_0002 removes exactly what
it added (tables, index, the `jobs` columns, triggers) and keeps the earlier tables, their rows and their
triggers; upgrading again reaches the schema of the models.

Each test gets a fresh database: a SQLite file, or a PostgreSQL schema of its own, dropped afterwards.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from alembic import command
from sqlalchemy import Engine, func, insert, inspect, select, text
from sqlalchemy.exc import DBAPIError

from shoparena.arena import open_arena
from shoparena.arena.arena import ARENA_MIGRATIONS
from shoparena.arena.config import DEFAULT_STATE_FILE
from shoparena.arena.jobs.board import JobBoard
from shoparena.arena.schema import (
    COMPETITION_TABLES,
    JOB_LEASES,
    JOBS,
    SUBMISSION_EVENTS,
    SUBMISSIONS,
    VERSION_TABLE,
    Base,
)
from shoparena.store import open_store
from shoparena.store.engine import alembic_config, write_transaction
from tests.arena.arena_helpers import Key, arena_schema_differences, make_arena

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
RACE_ID = "race-00001"
BEFORE_0003 = "arena_0002"
UPDATES = {
    # table -> (column, new value): a real change to a row the test inserted
    "races": ("seed", "'another seed'"),
    "race_events": ("state", "'CANCELLED'"),
    "race_entries": ("qualifying_score", "0.0"),
    "race_outcomes": ("winner", "'5Thief'"),
    "weight_vectors": ("source", "'forged'"),
    # and in three tables of arena_0001 and arena_0002, whose triggers a downgrade of 0003 must keep
    "submissions": ("name", "'renamed.py'"),
    "jobs": ("scoring_pipeline_version", "'forged'"),
    "job_leases": ("validator_hotkey", "'5Thief'"),
}
JOB_COLUMNS_OF_0002 = (
    "id, job_id, submission_id, problems_sha256, catalog_fingerprint, suite, suite_version, "
    "scoring_pipeline_version, settings, created_at"
)
JOB_COLUMNS_OF_0003 = {
    ("column", JOBS, "kind"),
    ("column", JOBS, "race_id"),
    ("column", JOBS, "problem_ids"),
}


@pytest.fixture
def pg_schema_url(pg_store_url, pg_database):
    """The store tests' fresh PostgreSQL schema, dropped (with everything in it) when the test ends."""
    yield pg_store_url
    options = parse_qs(urlsplit(pg_store_url).query)["options"][0]
    schema = options.removeprefix("-csearch_path=")
    with psycopg.connect(pg_database, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request):
    """Where the arena's state lives: None (SQLite in the arena directory) or a fresh PostgreSQL schema."""
    return None if request.param == "sqlite" else request.getfixturevalue("pg_schema_url")


def add_earlier_rows(arena, miner: Key, validator: Key) -> str:
    """A submission, its events, a job and a lease, written by the arena's own ledger and job board."""
    sid = arena.ledger.record(
        hotkey=miner.hotkey,
        name="agent.py",
        code_sha256="ab" * 32,
        code_size=10,
        violations=[],
        cooldown_s=0,
        now=T0,
    )
    offer = JobBoard(arena, clock=lambda: (T0 + timedelta(seconds=5)).timestamp()).claim(validator.hotkey)
    assert offer is not None and offer.submission_id == sid
    return offer.job_id


def add_competition_rows(engine: Engine, job_id: str) -> dict[str, int]:
    """One row in each competition table (a race, its event, a racer, its outcome, a weight vector);
    their ids by table."""
    tables = Base.metadata.tables
    values = {
        "races": {
            "race_id": RACE_ID,
            "opened_at": T0,
            "starts_at": T0 + timedelta(minutes=30),
            "deadline_at": T0 + timedelta(hours=1),
            "rotation_period": 1,
            "rotation_sha256": "cd" * 32,
            "rotation": {"period": 1},
            "seed": "the seed",
            "seed_commitment": "ef" * 32,
            "problem_ids": ["p1", "p2"],
            "race_clusters": ["c1"],
            "open_clusters": ["c2"],
            "incumbent_before": None,
            "bank_sha256": "01" * 32,
        },
        "race_events": {"race_id": RACE_ID, "state": "QUALIFYING_OPEN", "detail": "opened", "created_at": T0},
        "race_entries": {
            "race_id": RACE_ID,
            "hotkey": "5Racer",
            "submission_id": "a" * 32,
            "job_id": job_id,
            "qualifying_score": 0.75,
            "submitted_at": T0,
            "created_at": T0,
        },
        "race_outcomes": {
            "race_id": RACE_ID,
            "state": "RACE_COMPLETE",
            "winner": "5Racer",
            "winner_submission_id": "a" * 32,
            "promoted": True,
            "code_release_at": None,
            "race": {"race_id": RACE_ID},
            "created_at": T0,
        },
        "weight_vectors": {
            "race_id": RACE_ID,
            "source": "consensus",
            "validator_hotkey": None,
            "uids": [1],
            "weights": [1.0],
            "created_at": T0,
        },
    }
    assert set(values) == set(COMPETITION_TABLES)
    ids = {}
    with engine.begin() as connection:
        for table in COMPETITION_TABLES:
            ids[table] = connection.execute(insert(tables[table]).values(values[table])).inserted_primary_key[
                0
            ]
    return ids


def value(engine: Engine, table: str, column: str, row_id: int):
    with engine.connect() as connection:
        return connection.execute(
            text(f"SELECT {column} FROM {table} WHERE id = :id"), {"id": row_id}
        ).scalar_one()


def count(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(text(table))).scalar_one()


def rows(engine: Engine, table: str, columns: str = "*") -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(f"SELECT {columns} FROM {table} ORDER BY id"))]


def refused(table: str, operation: str) -> str:
    """The error the append-only triggers raise, naming the table and the operation (both dialects)."""
    return (
        rf"shoparena arena: {table} is append-only; {operation} is not allowed \(append a new row instead\)"
    )


def assert_append_only(engine: Engine, table: str, row_id: int) -> None:
    """UPDATE and DELETE of the existing row `row_id` (and TRUNCATE, on PostgreSQL) fail with the arena's
    error and leave the row as it was."""
    column, new = UPDATES[table]
    before = value(engine, table, column, row_id)
    statements = [
        (f"UPDATE {table} SET {column} = {new} WHERE id = {row_id}", "UPDATE"),
        (f"DELETE FROM {table} WHERE id = {row_id}", "DELETE"),
    ]
    if engine.dialect.name == "postgresql":  # SQLite has no TRUNCATE; CASCADE gets past the foreign keys
        statements.append((f"TRUNCATE {table} CASCADE", "TRUNCATE"))
    for statement, operation in statements:
        with pytest.raises(DBAPIError, match=refused(table, operation)), engine.begin() as connection:
            connection.execute(text(statement))
    assert value(engine, table, column, row_id) == before


def schema(engine: Engine) -> set[tuple]:
    """Everything in the database's schema as comparable facts: tables, columns, indexes, unique and
    foreign-key constraints, triggers and (PostgreSQL) functions."""
    inspector = inspect(engine)
    facts: set[tuple] = set()
    for table in inspector.get_table_names():
        facts.add(("table", table))
        for column in inspector.get_columns(table):
            facts.add(("column", table, column["name"], str(column["type"]), column["nullable"]))
        for index in inspector.get_indexes(table):
            facts.add(("index", table, index["name"], tuple(index["column_names"]), bool(index["unique"])))
        for unique in inspector.get_unique_constraints(table):
            facts.add(("unique", table, unique["name"], tuple(unique["column_names"])))
        for key in inspector.get_foreign_keys(table):
            facts.add(
                ("foreign key", table, key["name"], tuple(key["constrained_columns"]), key["referred_table"])
            )
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            triggers = connection.execute(
                text(
                    "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
                )
            )
            functions = connection.execute(
                text("SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace")
            )
            facts |= {("function", name) for (name,) in functions}
        else:
            triggers = connection.execute(
                text("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
            )
        facts |= {("trigger", table, name) for table, name in triggers}
    return facts


def downgrade(engine: Engine, revision: str) -> None:
    with write_transaction(engine) as connection:
        command.downgrade(alembic_config(connection, ARENA_MIGRATIONS), revision)


def upgrade(engine: Engine, revision: str) -> None:
    with write_transaction(engine) as connection:
        command.upgrade(alembic_config(connection, ARENA_MIGRATIONS), revision)


def arena_revision(engine: Engine) -> str:
    with engine.connect() as connection:
        return connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar_one()


def triggers_of_0003(dialect: str) -> set[tuple]:
    names = ("append_only", "no_truncate") if dialect == "postgresql" else ("no_update", "no_delete")
    return {("trigger", table, f"{table}_{name}") for table in COMPETITION_TABLES for name in names}


def test_the_competition_tables_refuse_update_delete_and_truncate(
    state_url, tmp_path, small_catalog_dir, problems_file, miner, validator
):
    arena = make_arena(
        tmp_path / "arena", small_catalog_dir, problems_file, {"validator": [validator]}, store=state_url
    )
    with arena:
        engine = arena.store.engine
        ids = add_competition_rows(engine, add_earlier_rows(arena, miner, validator))
        for table, row_id in ids.items():
            assert_append_only(engine, table, row_id)
        assert {table: count(engine, table) for table in COMPETITION_TABLES} == dict.fromkeys(ids, 1)

        # The statements above reach a row: without the triggers the same UPDATE changes it.
        for _, table, trigger in triggers_of_0003(engine.dialect.name):
            with engine.begin() as connection:
                on = f" ON {table}" if engine.dialect.name == "postgresql" else ""
                connection.execute(text(f"DROP TRIGGER {trigger}{on}"))
        for table, row_id in ids.items():
            column, new = UPDATES[table]
            with engine.begin() as connection:
                changed = connection.execute(text(f"UPDATE {table} SET {column} = {new} WHERE id = {row_id}"))
                assert changed.rowcount == 1


def test_downgrading_0003_removes_exactly_what_it_added_and_upgrading_again_restores_it(
    state_url, tmp_path, small_catalog_dir, problems_file, miner, validator
):
    arena_dir = tmp_path / "arena"
    arena_dir.mkdir()
    with open_store(state_url or arena_dir / DEFAULT_STATE_FILE) as store:  # the arena's state, at arena_0002
        upgrade(store.engine, BEFORE_0003)
        at_0002 = schema(store.engine)
    assert ("table", JOBS) in at_0002 and not {("table", table) for table in COMPETITION_TABLES} & at_0002

    arena = make_arena(
        arena_dir, small_catalog_dir, problems_file, {"validator": [validator]}, store=state_url
    )
    with arena:  # init_arena upgraded the existing arena_0002 database to head
        engine = arena.store.engine
        at_head = schema(engine)
        added, removed = at_head - at_0002, at_0002 - at_head
        assert removed == set()
        assert {fact[1] for fact in added} == {*COMPETITION_TABLES, JOBS}
        assert {fact[:3] for fact in added if fact[1] == JOBS} == {
            *JOB_COLUMNS_OF_0003,
            ("index", JOBS, "ix_jobs_race"),
        }
        assert {fact for fact in added if fact[0] == "trigger"} == triggers_of_0003(engine.dialect.name)
        assert arena_schema_differences(engine) == []

        job_id = add_earlier_rows(arena, miner, validator)
        add_competition_rows(engine, job_id)
        earlier = {table: rows(engine, table) for table in (SUBMISSIONS, SUBMISSION_EVENTS, JOB_LEASES)}
        assert [len(earlier[table]) for table in earlier] == [1, 2, 1]
        job = rows(engine, JOBS, JOB_COLUMNS_OF_0002)

        downgrade(engine, BEFORE_0003)
        assert arena_revision(engine) == BEFORE_0003
        assert schema(engine) == at_0002
        assert {table: rows(engine, table) for table in earlier} == earlier
        assert rows(engine, JOBS) == job
        for table in (SUBMISSIONS, JOBS, JOB_LEASES):  # the earlier triggers still hold
            assert_append_only(engine, table, rows(engine, table, "id")[0][0])

    with open_arena(arena_dir) as arena:  # opening an arena upgrades it to head again
        engine = arena.store.engine
        assert schema(engine) == at_head
        assert arena_schema_differences(engine) == []
        assert {table: rows(engine, table) for table in earlier} == earlier
        assert rows(engine, JOBS, JOB_COLUMNS_OF_0002) == job
        assert rows(engine, JOBS, "kind, race_id, problem_ids") == [(None, None, None)]
        for table, row_id in add_competition_rows(engine, job_id).items():
            assert_append_only(engine, table, row_id)
