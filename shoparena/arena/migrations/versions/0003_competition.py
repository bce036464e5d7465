"""The competition (SPEC §6): job kinds with explicit problem lists, races, their state changes, racers,
outcomes and weight vectors.

`jobs` gains three nullable columns (old rows keep meaning "the arena's whole problem bank"); the new
tables are append-only with the same triggers as the first ones (the PostgreSQL trigger function of
arena_0001 is reused). Written out here, not imported from the models (see arena_0001).

Revision ID: arena_0003
Revises: arena_0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "arena_0003"
down_revision = "arena_0002"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIMESTAMP = sa.DateTime(timezone=True)
APPEND_ONLY = ("races", "race_events", "race_entries", "race_outcomes", "weight_vectors")
PG_FUNCTION = "shoparena_arena_append_only"


def upgrade() -> None:
    op.add_column("jobs", sa.Column("kind", sa.String(16)))
    op.add_column("jobs", sa.Column("race_id", sa.String(40)))
    op.add_column("jobs", sa.Column("problem_ids", sa.JSON()))
    op.create_index("ix_jobs_race", "jobs", ["race_id"])
    op.create_table(
        "races",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("race_id", sa.String(40), nullable=False),
        sa.Column("opened_at", TIMESTAMP, nullable=False),
        sa.Column("starts_at", TIMESTAMP, nullable=False),
        sa.Column("deadline_at", TIMESTAMP, nullable=False),
        sa.Column("rotation_period", sa.Integer(), nullable=False),
        sa.Column("rotation_sha256", sa.String(64), nullable=False),
        sa.Column("rotation", sa.JSON(), nullable=False),
        sa.Column("seed", sa.String(128), nullable=False),
        sa.Column("seed_commitment", sa.String(64), nullable=False),
        sa.Column("problem_ids", sa.JSON(), nullable=False),
        sa.Column("race_clusters", sa.JSON(), nullable=False),
        sa.Column("open_clusters", sa.JSON(), nullable=False),
        sa.Column("incumbent_before", sa.String(64)),
        sa.Column("bank_sha256", sa.String(64), nullable=False),
        sa.UniqueConstraint("race_id"),
    )
    op.create_table(
        "race_events",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("race_id", sa.String(40), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("detail", sa.Text()),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["race_id"], ["races.race_id"], name="fk_race_events_race"),
    )
    op.create_index("ix_race_events_race", "race_events", ["race_id", "id"])
    op.create_table(
        "race_entries",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("race_id", sa.String(40), nullable=False),
        sa.Column("hotkey", sa.String(64), nullable=False),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("qualifying_score", sa.Float(), nullable=False),
        sa.Column("submitted_at", TIMESTAMP, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["race_id"], ["races.race_id"], name="fk_race_entries_race"),
        sa.UniqueConstraint("race_id", "hotkey", name="uq_race_entries_race_hotkey"),
    )
    op.create_table(
        "race_outcomes",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("race_id", sa.String(40), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("winner", sa.String(64)),
        sa.Column("winner_submission_id", sa.String(40)),
        sa.Column("promoted", sa.Boolean(), nullable=False),
        sa.Column("code_release_at", TIMESTAMP),
        sa.Column("race", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["race_id"], ["races.race_id"], name="fk_race_outcomes_race"),
        sa.UniqueConstraint("race_id"),
    )
    op.create_table(
        "weight_vectors",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("race_id", sa.String(40)),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("validator_hotkey", sa.String(64)),
        sa.Column("uids", sa.JSON(), nullable=False),
        sa.Column("weights", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_weight_vectors_race", "weight_vectors", ["race_id", "source"])

    if op.get_bind().dialect.name == "postgresql":
        for table in APPEND_ONLY:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_FUNCTION}()"
            )
    else:
        for table in APPEND_ONLY:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'shoparena arena: {table} is append-only; {action} is not "
                    "allowed (append a new row instead)'); END"
                )


def downgrade() -> None:
    for table in APPEND_ONLY:
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
        else:
            for action in ("update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_no_{action}")
    for table in ("weight_vectors", "race_outcomes", "race_entries", "race_events", "races"):
        op.drop_table(table)
    op.drop_index("ix_jobs_race", "jobs")
    # ALTER TABLE … DROP COLUMN on both dialects (SQLite has it since 3.35), not batch_alter_table: on
    # SQLite that rebuilds `jobs` (copy, DROP TABLE, rename), which loses its append-only triggers and
    # fails on the foreign key of `job_leases` once any job has a lease.
    for column in ("problem_ids", "race_id", "kind"):
        op.drop_column("jobs", column)
