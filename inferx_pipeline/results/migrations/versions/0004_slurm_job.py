"""Results name the Slurm job (and cluster) their server ran in; older rows read as null.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("results", sa.Column("slurm_job_id", sa.String(), nullable=True))
    op.add_column("results", sa.Column("slurm_cluster", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("results", "slurm_cluster")
    op.drop_column("results", "slurm_job_id")
