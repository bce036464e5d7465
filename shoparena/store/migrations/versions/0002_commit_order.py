"""`evaluations.commit_order`: the order a follower can read rows in without ever missing a late commit.

On PostgreSQL a row id comes from a sequence when the row is inserted, not when its transaction
commits, so a follower that pages by row id can pass a row whose transaction is still open and never
see it. The column's default is the writing transaction's id (`pg_current_xact_id()`); a reader that
serves only rows whose transaction id is below the oldest write transaction still open on the database,
ordered by (commit_order, id), can
never have a row commit behind its cursor (see `shoparena.store.feed`). Rows written before this
revision keep 0 and come first, in row id order, as before. SQLite keeps 0 on every row: its row ids
are already handed out under the single write lock, in commit order.

Adding a column with a constant default rewrites nothing (and fires no append-only trigger); the
PostgreSQL default is then switched to the transaction id for new rows.

Revision ID: 0002_commit_order
Revises: 0001_initial
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_commit_order"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

PG_TRANSACTION_ID = "(pg_current_xact_id()::text::bigint)"


def upgrade() -> None:
    op.add_column(
        "evaluations", sa.Column("commit_order", sa.BigInteger(), nullable=False, server_default=sa.text("0"))
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE evaluations ALTER COLUMN commit_order SET DEFAULT {PG_TRANSACTION_ID}")
    op.create_index("ix_evaluations_commit_order", "evaluations", ["commit_order", "id"])


def downgrade() -> None:
    op.drop_index("ix_evaluations_commit_order", table_name="evaluations")
    op.drop_column("evaluations", "commit_order")
