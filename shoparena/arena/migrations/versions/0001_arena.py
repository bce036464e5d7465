"""The arena's first tables: the local metagraph, submissions and their events, results, the audit log.

The table definitions are written out here (not imported from the models) so this revision stays what
it was when later revisions change the models; a test checks that head and the models agree.

Revision ID: arena_0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "arena_0001"
down_revision = None
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIMESTAMP = sa.DateTime(timezone=True)
APPEND_ONLY = ("submissions", "submission_events", "submission_results", "problem_results", "audit")
PG_FUNCTION = "shoparena_arena_append_only"


def upgrade() -> None:
    op.create_table(
        "neurons",
        sa.Column("hotkey", sa.String(64), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("stake", sa.Float(), nullable=False),
        sa.Column("uid", sa.Integer()),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "submissions",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("miner_hotkey", sa.String(64), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("code_sha256", sa.String(64), nullable=False),
        sa.Column("code_size", sa.Integer(), nullable=False),
        sa.Column("admitted", sa.Boolean(), nullable=False),
        sa.Column("violations", sa.JSON(), nullable=False),
        sa.Column("cooldown_s", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.UniqueConstraint("submission_id"),
    )
    op.create_index("ix_submissions_miner_created", "submissions", ["miner_hotkey", "created_at"])
    op.create_table(
        "submission_events",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(64)),
        sa.Column("detail", sa.Text()),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submissions.submission_id"], name="fk_submission_events_submission"
        ),
    )
    op.create_index("ix_submission_events_submission", "submission_events", ["submission_id", "id"])
    op.create_index("ix_submission_events_status", "submission_events", ["status"])
    op.create_table(
        "submission_results",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("validator_hotkey", sa.String(64), nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("suite", sa.String(128)),
        sa.Column("suite_version", sa.String(128)),
        sa.Column("scoring_pipeline_version", sa.String(64), nullable=False),
        sa.Column("problems", sa.Integer(), nullable=False),
        sa.Column("successes", sa.Integer(), nullable=False),
        sa.Column("asr", sa.Float(), nullable=False),
        sa.Column("mean_rule_score", sa.Float()),
        sa.Column("judge_quality", sa.Float()),
        sa.Column("coefficient", sa.Float()),
        sa.Column("final_score", sa.Float()),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submissions.submission_id"], name="fk_submission_results_submission"
        ),
        sa.UniqueConstraint("job_id", "validator_hotkey", name="uq_submission_results_job_validator"),
    )
    op.create_index("ix_submission_results_submission", "submission_results", ["submission_id"])
    op.create_table(
        "problem_results",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("result_id", ROW_ID, nullable=False),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("bucket", sa.String(32)),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("rule_score", sa.Float()),
        sa.Column("judge_quality", sa.Float()),
        sa.Column("judge_gate", sa.String(64)),
        sa.Column("end_reason", sa.String(64)),
        sa.Column("steps_used", sa.Integer()),
        sa.Column("error", sa.Text()),
        sa.Column("record_id", sa.String(64)),
        sa.ForeignKeyConstraint(["result_id"], ["submission_results.id"], name="fk_problem_results_result"),
        sa.UniqueConstraint("result_id", "problem_id", name="uq_problem_results_result_problem"),
    )
    op.create_table(
        "audit",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("path", sa.String(256), nullable=False),
        sa.Column("remote", sa.String(64)),
        sa.Column("hotkey", sa.String(64)),
        sa.Column("nonce", sa.String(64)),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("detail", sa.String(512)),
        sa.Column("submission_id", sa.String(40)),
    )
    op.create_index("ix_audit_created", "audit", ["created_at"])
    op.create_index("ix_audit_hotkey", "audit", ["hotkey"])

    if op.get_bind().dialect.name == "postgresql":
        _postgresql_triggers()
    else:
        _sqlite_triggers()


def _sqlite_triggers() -> None:
    for table in APPEND_ONLY:
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'shoparena arena: {table} is append-only; {action} is not "
                "allowed (append a new row instead)'); END"
            )


def _postgresql_triggers() -> None:
    op.execute(
        f"""
        CREATE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'shoparena arena: % is append-only; % is not allowed (append a new row instead)',
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
    for table in (
        "audit",
        "problem_results",
        "submission_results",
        "submission_events",
        "submissions",
        "neurons",
    ):
        op.drop_table(table)
