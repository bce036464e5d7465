"""Initial store: evaluations, invalidations, their indexes and the append-only triggers.

The table definitions are written out here (not imported from the models) so this revision stays what
it was when later revisions change the models; a test checks that head and the models agree.

Revision ID: 0001_initial
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
RECORD_JSON = sa.JSON().with_variant(JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
APPEND_ONLY = ("evaluations", "invalidations")
PG_FUNCTION = "shoparena_append_only"


def upgrade() -> None:
    op.create_table(
        "evaluations",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("record_id", sa.String(64), nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(256), nullable=False),
        sa.Column("agent_kind", sa.String(64), nullable=False),
        sa.Column("agent_version", sa.String(128), nullable=False),
        sa.Column("agent_spec", sa.Text(), nullable=False),
        sa.Column("miner_hotkey", sa.String(128)),
        sa.Column("validator_hotkey", sa.String(128)),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("bucket", sa.String(32), nullable=False),
        sa.Column("suite", sa.String(128)),
        sa.Column("suite_version", sa.String(128)),
        sa.Column("leak_cluster_id", sa.String(128)),
        sa.Column("scoring_mode", sa.String(32), nullable=False),
        sa.Column("scoring_pipeline_version", sa.String(64), nullable=False),
        sa.Column("success", sa.Boolean()),
        sa.Column("rule_score", sa.Float()),
        sa.Column("judge_quality", sa.Float()),
        sa.Column("judge_gate", sa.String(64)),
        sa.Column("steps_used", sa.Integer(), nullable=False),
        sa.Column("agent_error", sa.Boolean(), nullable=False),
        sa.Column("shoparena_version", sa.String(64), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("ingested_at", TIMESTAMP, nullable=False),
        sa.Column("record", RECORD_JSON, nullable=False),
        sa.Column("record_text", sa.Text()),
        sa.UniqueConstraint("record_id"),
    )
    op.create_index("ix_evaluations_agent_created", "evaluations", ["agent_id", "created_at"])
    op.create_index("ix_evaluations_miner_hotkey", "evaluations", ["miner_hotkey"])
    op.create_index("ix_evaluations_problem_id", "evaluations", ["problem_id"])
    op.create_index("ix_evaluations_suite", "evaluations", ["suite", "suite_version"])
    op.create_index("ix_evaluations_run_id", "evaluations", ["run_id"])
    op.create_index("ix_evaluations_created_at", "evaluations", ["created_at"])
    op.create_index("ix_evaluations_bucket", "evaluations", ["bucket"])

    op.create_table(
        "invalidations",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("record_id", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("invalidated_by", sa.String(128)),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["record_id"], ["evaluations.record_id"], name="fk_invalidations_record_id"),
    )
    op.create_index("ix_invalidations_record_id", "invalidations", ["record_id"])

    if op.get_bind().dialect.name == "postgresql":
        _postgresql_triggers()
    else:
        _sqlite_triggers()


def _sqlite_triggers() -> None:
    for table in APPEND_ONLY:
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'shoparena store: {table} is append-only; {action} is not "
                "allowed (record an invalidation instead)'); END"
            )


def _postgresql_triggers() -> None:
    op.execute(
        f"""
        CREATE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'shoparena store: % is append-only; % is not allowed (record an invalidation instead)',
                TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'restrict_violation';
        END
        $$
        """
    )
    for table in APPEND_ONLY:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_FUNCTION}()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in APPEND_ONLY:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")
    else:
        for table in APPEND_ONLY:
            for action in ("update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_no_{action}")
    op.drop_table("invalidations")
    op.drop_table("evaluations")
