"""Results carry E2E-normalized interactivity (1 / statistic of E2EL per output token,
tok/s/user) at each statistic; older rows read as null.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

STATS = ("mean", "median", "p90", "p99")


def upgrade() -> None:
    for stat in STATS:
        op.add_column("results", sa.Column(f"e2e_intvty_{stat}", sa.Float(), nullable=True))


def downgrade() -> None:
    for stat in reversed(STATS):
        op.drop_column("results", f"e2e_intvty_{stat}")
