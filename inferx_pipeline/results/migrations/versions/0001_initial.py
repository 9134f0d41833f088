"""Results and quarantine tables.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "quarantine",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("source", sa.String(), nullable=True),
        sa.Column("code", sa.String(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("rejected_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("artifact_sha256"),
    )
    op.create_table(
        "results",
        sa.Column("result_id", sa.String(length=64), nullable=False),
        sa.Column("recipe_id", sa.String(), nullable=False),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("job_id", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("model_family", sa.String(), nullable=False),
        sa.Column("precision", sa.String(), nullable=False),
        sa.Column("sku", sa.String(), nullable=False),
        sa.Column("vendor", sa.String(), nullable=False),
        sa.Column("framework", sa.String(), nullable=False),
        sa.Column("image", sa.String(), nullable=False),
        sa.Column("image_tag", sa.String(), nullable=False),
        sa.Column("image_digest", sa.String(), nullable=True),
        sa.Column("engine_version", sa.String(), nullable=True),
        sa.Column("scenario", sa.String(), nullable=False),
        sa.Column("isl", sa.Integer(), nullable=True),
        sa.Column("osl", sa.Integer(), nullable=True),
        sa.Column("tp", sa.Integer(), nullable=False),
        sa.Column("ep", sa.Integer(), nullable=False),
        sa.Column("pp", sa.Integer(), nullable=False),
        sa.Column("pcp", sa.Integer(), nullable=False),
        sa.Column("dp_attn", sa.Boolean(), nullable=False),
        sa.Column("kv_offload", sa.String(), nullable=False),
        sa.Column("kv_offload_backend", sa.String(), nullable=True),
        sa.Column("spec_method", sa.String(), nullable=False),
        sa.Column("draft_tokens", sa.Integer(), nullable=False),
        sa.Column("acceptance_mode", sa.String(), nullable=False),
        sa.Column("target_al", sa.Float(), nullable=True),
        sa.Column("realized_al", sa.Float(), nullable=True),
        sa.Column("thinking", sa.String(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("conc", sa.Integer(), nullable=False),
        sa.Column("tput_per_gpu", sa.Float(), nullable=False),
        sa.Column("input_tput_per_gpu", sa.Float(), nullable=False),
        sa.Column("output_tput_per_gpu", sa.Float(), nullable=False),
        sa.Column("request_throughput", sa.Float(), nullable=True),
        sa.Column("ttft_mean_s", sa.Float(), nullable=True),
        sa.Column("ttft_median_s", sa.Float(), nullable=True),
        sa.Column("ttft_p90_s", sa.Float(), nullable=True),
        sa.Column("ttft_p99_s", sa.Float(), nullable=True),
        sa.Column("tpot_mean_s", sa.Float(), nullable=True),
        sa.Column("tpot_median_s", sa.Float(), nullable=True),
        sa.Column("tpot_p90_s", sa.Float(), nullable=True),
        sa.Column("tpot_p99_s", sa.Float(), nullable=True),
        sa.Column("itl_mean_s", sa.Float(), nullable=True),
        sa.Column("itl_median_s", sa.Float(), nullable=True),
        sa.Column("itl_p90_s", sa.Float(), nullable=True),
        sa.Column("itl_p99_s", sa.Float(), nullable=True),
        sa.Column("e2el_mean_s", sa.Float(), nullable=True),
        sa.Column("e2el_median_s", sa.Float(), nullable=True),
        sa.Column("e2el_p90_s", sa.Float(), nullable=True),
        sa.Column("e2el_p99_s", sa.Float(), nullable=True),
        sa.Column("intvty_mean", sa.Float(), nullable=True),
        sa.Column("intvty_median", sa.Float(), nullable=True),
        sa.Column("intvty_p90", sa.Float(), nullable=True),
        sa.Column("intvty_p99", sa.Float(), nullable=True),
        sa.Column("success_rate", sa.Float(), nullable=True),
        sa.Column("measured_isl", sa.Float(), nullable=True),
        sa.Column("measured_osl", sa.Float(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("num_requests", sa.Integer(), nullable=True),
        sa.Column("failed_requests", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("client_version", sa.String(), nullable=True),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("official", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifacts", sa.Text(), nullable=False),
        sa.CheckConstraint("conc >= 1", name="ck_results_conc"),
        sa.CheckConstraint("gpus >= 1", name="ck_results_gpus"),
        sa.CheckConstraint("success_rate >= 0 AND success_rate <= 1", name="ck_results_success"),
        sa.CheckConstraint("tput_per_gpu >= 0", name="ck_results_tput"),
        sa.PrimaryKeyConstraint("result_id"),
        sa.UniqueConstraint("artifact_sha256"),
    )
    op.create_index(
        "ix_results_group",
        "results",
        ["model", "scenario", "sku", "framework", "precision", "spec_method"],
    )
    op.create_index("ix_results_history", "results", ["recipe_id", "sku", "conc", "image_tag"])


def downgrade() -> None:
    op.drop_index("ix_results_history", "results")
    op.drop_index("ix_results_group", "results")
    op.drop_table("results")
    op.drop_table("quarantine")
