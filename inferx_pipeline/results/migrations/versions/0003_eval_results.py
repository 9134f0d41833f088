"""Accuracy-eval scores: one row per scored eval point, beside the throughput results.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_results",
        sa.Column("result_id", sa.String(length=64), nullable=False),
        sa.Column("recipe_id", sa.String(), nullable=False),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("server_fingerprint", sa.String(), nullable=False),
        sa.Column("job_id", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("model_family", sa.String(), nullable=False),
        sa.Column("precision", sa.String(), nullable=False),
        sa.Column("sku", sa.String(), nullable=False),
        sa.Column("framework", sa.String(), nullable=False),
        sa.Column("image", sa.String(), nullable=False),
        sa.Column("image_digest", sa.String(), nullable=True),
        sa.Column("engine_version", sa.String(), nullable=True),
        sa.Column("scenario", sa.String(), nullable=False),
        sa.Column("isl", sa.Integer(), nullable=True),
        sa.Column("osl", sa.Integer(), nullable=True),
        sa.Column("tp", sa.Integer(), nullable=False),
        sa.Column("ep", sa.Integer(), nullable=False),
        sa.Column("dp_attn", sa.Boolean(), nullable=False),
        sa.Column("spec_method", sa.String(), nullable=False),
        sa.Column("thinking", sa.String(), nullable=False),
        sa.Column("conc", sa.Integer(), nullable=False),
        sa.Column("task", sa.String(), nullable=False),
        sa.Column("lm_eval_task", sa.String(), nullable=False),
        sa.Column("dataset", sa.String(), nullable=False),
        sa.Column("exact_match", sa.Float(), nullable=False),
        sa.Column("exact_match_stderr", sa.Float(), nullable=False),
        sa.Column("scores", sa.Text(), nullable=False),
        sa.Column("n_original", sa.Integer(), nullable=False),
        sa.Column("n_effective", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("threshold_source", sa.Text(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("lm_eval_version", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("samples_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifacts", sa.Text(), nullable=False),
        sa.CheckConstraint("conc >= 1", name="ck_eval_results_conc"),
        sa.PrimaryKeyConstraint("result_id"),
        sa.UniqueConstraint("artifact_sha256"),
    )
    op.create_index(
        "ix_eval_results_server",
        "eval_results",
        ["server_fingerprint", "image_digest"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_eval_results_server", table_name="eval_results")
    op.drop_table("eval_results")
