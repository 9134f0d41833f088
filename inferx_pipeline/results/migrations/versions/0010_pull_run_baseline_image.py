"""A PR run's baseline may name an image: the official points of its recipe at that image.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pull_request_runs", sa.Column("baseline_image", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("pull_request_runs", "baseline_image")
