"""Quarantine entries name the sweep point (job id) they belong to.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("quarantine", sa.Column("job_id", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("quarantine", "job_id")
