"""Eval scores name where they come from: inferx (our sweeps) or inferencex (imported);
older rows read as inferx.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "eval_results",
        sa.Column("source", sa.String(), nullable=False, server_default="inferx"),
    )


def downgrade() -> None:
    with op.batch_alter_table("eval_results") as batch:
        batch.drop_column("source")
