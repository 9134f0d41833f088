"""Results and eval scores of unofficial runs carry their pull request and head commit,
and a promoted point the run that measured it; rows stored before are official and
measured by their run. Each swept PR run gets a row of its own (``pull_request_runs``):
the baseline recipe its PR named.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


TABLES = ("results", "eval_results")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("pr_number", sa.Integer(), nullable=True))
        op.add_column(table, sa.Column("head_sha", sa.String(), nullable=True))
        op.add_column(table, sa.Column("measured_in", sa.String(), nullable=True))
        op.create_index(f"ix_{table}_pr_number", table, ["pr_number"])
    op.create_table(
        "pull_request_runs",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("head_sha", sa.String(), nullable=False),
        sa.Column("label", sa.String(), nullable=True),
        sa.Column("baseline_recipe", sa.String(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_pull_request_runs_pr_number", "pull_request_runs", ["pr_number"])


def downgrade() -> None:
    op.drop_index("ix_pull_request_runs_pr_number", table_name="pull_request_runs")
    op.drop_table("pull_request_runs")
    for table in reversed(TABLES):
        op.drop_index(f"ix_{table}_pr_number", table_name=table)
        for column in ("measured_in", "head_sha", "pr_number"):
            op.drop_column(table, column)
