"""Migrations and the append-only guarantee, proven at the database level (raw DBAPI SQL, not the ORM)."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from shoparena.store import StoreError, StoreURLError, open_store
from shoparena.store.engine import alembic_config, current_revision, resolve_store_url
from shoparena.store.records import canonical_bytes, content_sha256
from shoparena.store.schema import Base


def raw_sql(store, sql: str) -> None:
    """Run SQL on the driver's own connection (sqlite3 / psycopg), bypassing SQLAlchemy entirely."""
    connection = store.engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        connection.commit()
    except Exception:
        connection.rollback()
        raise
    finally:
        connection.close()


def raw_scalar(store, sql: str):
    connection = store.engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        return cursor.fetchone()[0]
    finally:
        connection.close()


def test_migrations_reach_head_and_match_the_models(store):
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head == "0002_commit_order"
    assert current_revision(store.engine) == head
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_reopening_is_a_no_op_and_keeps_rows(store_url, records):
    with open_store(store_url) as first:
        first.ingest(records[:3])
    with open_store(store_url) as again:
        assert current_revision(again.engine) == "0002_commit_order"
        assert again.count() == 3


def test_0002_goes_down_and_up_again_keeping_rows_and_the_append_only_triggers(store_url, records):
    """Rows from before 0002 read commit_order 0; the downgrade drops only the column and its index."""
    from alembic import command

    from shoparena.store.engine import alembic_config, upgrade_to_head, write_transaction

    with open_store(store_url) as store:
        store.ingest(records[:2]).raise_for_conflicts()
        with write_transaction(store.engine) as connection:
            command.downgrade(alembic_config(connection), "0001_initial")
        assert current_revision(store.engine) == "0001_initial"
        with pytest.raises(Exception, match="append-only"):
            raw_sql(store, "UPDATE evaluations SET rule_score = 0.5")
        raw_sql(store, "SELECT id FROM evaluations")  # the table is there, without commit_order
        with pytest.raises(Exception, match="commit_order"):
            raw_sql(store, "SELECT commit_order FROM evaluations")
        upgrade_to_head(store.engine)
        assert raw_scalar(store, "SELECT max(commit_order) FROM evaluations") == 0
        store.ingest(records[2:3]).raise_for_conflicts()
        newest = raw_scalar(store, "SELECT commit_order FROM evaluations ORDER BY id DESC LIMIT 1")
        assert (newest > 0) if store.dialect == "postgresql" else (newest == 0)
        with pytest.raises(Exception, match="append-only"):
            raw_sql(store, "DELETE FROM evaluations")
        assert store.count() == 3 and store.get(records[0].record_id) == records[0]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE evaluations SET rule_score = 1.0, success = TRUE WHERE record_id = '{id}'",
        "UPDATE evaluations SET agent_id = 'someone-else' WHERE record_id = '{id}'",
        "UPDATE evaluations SET record_id = 'renamed' WHERE record_id = '{id}'",
        "DELETE FROM evaluations WHERE record_id = '{id}'",
        "DELETE FROM evaluations",
    ],
)
def test_updates_and_deletes_of_evaluations_fail_in_the_database(store, records, statement):
    record = records[0]
    store.ingest(records[:4])
    with pytest.raises(Exception, match="append-only"):
        raw_sql(store, statement.format(id=record.record_id))
    assert store.count() == 4
    assert raw_scalar(
        store, f"SELECT rule_score FROM evaluations WHERE record_id = '{record.record_id}'"
    ) == (record.score.rule)
    assert store.get(record.record_id) == record


def test_the_record_json_itself_cannot_be_rewritten(store, records):
    record = records[1]
    store.ingest([record])
    replacement = "'{}'" if store.dialect == "sqlite" else "'{}'::jsonb"
    with pytest.raises(Exception, match="append-only"):
        raw_sql(
            store, f"UPDATE evaluations SET record = {replacement} WHERE record_id = '{record.record_id}'"
        )
    (_, data), *_ = store.canonical()
    assert data == canonical_bytes(record)
    assert content_sha256(data) == raw_scalar(store, "SELECT content_sha256 FROM evaluations")


def test_invalidations_are_append_only_too(store, records):
    record = records[2]
    store.ingest([record])
    store.invalidate(record.record_id, "judge was prompt-injected")
    for statement in (
        "UPDATE invalidations SET reason = 'never mind'",
        "DELETE FROM invalidations",
    ):
        with pytest.raises(Exception, match="append-only"):
            raw_sql(store, statement)
    assert [i.reason for i in store.invalidations(record.record_id)] == ["judge was prompt-injected"]


def test_truncate_fails_on_postgresql(pg_store_url, records):
    """SQLite has no TRUNCATE (its DELETE without WHERE is covered above)."""
    with open_store(pg_store_url) as store:
        store.ingest(records[:2])
        with pytest.raises(Exception, match="append-only"):
            raw_sql(store, "TRUNCATE evaluations CASCADE")
        assert store.count() == 2


def test_inserting_an_invalidation_for_an_unknown_record_fails_in_the_database(store, records):
    store.ingest(records[:1])
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        raw_sql(
            store,
            "INSERT INTO invalidations (record_id, reason, created_at) "
            "VALUES ('no-such-record', 'x', '2025-01-01 00:00:00')",
        )


def test_store_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHOPARENA_STORE", raising=False)
    assert resolve_store_url(None) == f"sqlite:///{tmp_path / 'shoparena.db'}"
    assert resolve_store_url("x/y.db") == f"sqlite:///{tmp_path / 'x' / 'y.db'}"
    assert resolve_store_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert resolve_store_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("SHOPARENA_STORE", "sqlite:////tmp/elsewhere.db")
    assert resolve_store_url(None) == "sqlite:////tmp/elsewhere.db"
    with pytest.raises(StoreURLError, match=r"SQLite .* or PostgreSQL"):
        open_store("mysql://u@h/db")
    with pytest.raises(StoreURLError, match="does not exist"):
        open_store(tmp_path / "missing-dir" / "s.db")


def test_unreachable_postgresql_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot open store postgresql"):
        open_store("postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2")


def test_many_processes_opening_a_new_store_at_once_all_succeed(store_url):
    import threading

    errors, revisions = [], []

    def opener():
        try:
            with open_store(store_url) as opened:
                revisions.append(current_revision(opened.engine))
        except Exception as exc:  # collected: the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert revisions == ["0002_commit_order"] * 4
