"""The job layer: jobs, validators' leases on them, and lease events (heartbeats and how leases ended).

All three are append-only, with the same triggers as the first tables (the PostgreSQL trigger function
of arena_0001 is reused). Written out here, not imported from the models (see arena_0001).

Revision ID: arena_0002
Revises: arena_0001
Create Date: 2025-06-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "arena_0002"
down_revision = "arena_0001"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIMESTAMP = sa.DateTime(timezone=True)
APPEND_ONLY = ("jobs", "job_leases", "lease_events")
PG_FUNCTION = "shoparena_arena_append_only"


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("problems_sha256", sa.String(64), nullable=False),
        sa.Column("catalog_fingerprint", sa.String(512), nullable=False),
        sa.Column("suite", sa.String(128)),
        sa.Column("suite_version", sa.String(128)),
        sa.Column("scoring_pipeline_version", sa.String(64), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.submission_id"], name="fk_jobs_submission"),
        sa.UniqueConstraint("job_id"),
    )
    op.create_index("ix_jobs_submission", "jobs", ["submission_id"])
    op.create_table(
        "job_leases",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("lease_id", sa.String(40), nullable=False),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("submission_id", sa.String(40), nullable=False),
        sa.Column("validator_hotkey", sa.String(64), nullable=False),
        sa.Column("claimed_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.job_id"], name="fk_job_leases_job"),
        sa.UniqueConstraint("lease_id"),
    )
    op.create_index("ix_job_leases_job", "job_leases", ["job_id"])
    op.create_table(
        "lease_events",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("lease_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("expires_at", TIMESTAMP),
        sa.Column("detail", sa.Text()),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["lease_id"], ["job_leases.lease_id"], name="fk_lease_events_lease"),
    )
    op.create_index("ix_lease_events_lease", "lease_events", ["lease_id", "kind"])

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
    for table in ("lease_events", "job_leases", "jobs"):
        op.drop_table(table)
