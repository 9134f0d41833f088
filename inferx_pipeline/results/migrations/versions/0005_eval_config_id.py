"""Eval scores name the configuration they judge (``results.configs``); older rows read
as null and are matched by their server fingerprint.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("eval_results", sa.Column("config_id", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_eval_results_config", "eval_results", ["config_id", "image_digest"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_eval_results_config", table_name="eval_results")
    with op.batch_alter_table("eval_results") as batch:
        batch.drop_column("config_id")
