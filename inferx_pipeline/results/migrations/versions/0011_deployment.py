"""Multinode deployments: the workers per role, their TP/EP, the router and KV transfer.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

INTEGERS = (
    "deployment_gpus", "prefill_workers", "prefill_tp", "prefill_ep",
    "decode_workers", "decode_tp", "decode_ep",
)  # fmt: skip
STRINGS = ("deployment", "router", "kv_transfer")


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        for name in STRINGS:
            batch.add_column(sa.Column(name, sa.String(), nullable=True))
        for name in INTEGERS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=True))
        # Every row before this revision is a single-node server.
        batch.add_column(
            sa.Column("disagg", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        for name in ("disagg", *INTEGERS, *STRINGS):
            batch.drop_column(name)
