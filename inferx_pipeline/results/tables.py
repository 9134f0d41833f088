"""SQLAlchemy 2 models of the results database: ``results``, ``quarantine``, ``eval_results``,
``pull_request_runs``.

``results`` has exactly the ``ResultRecord`` columns (checked by a test). Indexes serve
the leaderboard's two query shapes: a Pareto group (model, scenario, SKU, framework,
precision, spec method) and a history key (recipe, SKU, conc, image tag). Schema
changes go through a new Alembic revision in ``migrations/versions``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

HASH = String(64)


class Base(DeclarativeBase):
    """Declarative base of the results schema."""


class ResultRow(Base):
    """One ``ResultRecord``; units are in the column names."""

    __tablename__ = "results"
    __table_args__ = (
        Index(
            "ix_results_group", "model", "scenario", "sku", "framework", "precision", "spec_method"
        ),
        Index("ix_results_history", "recipe_id", "sku", "conc", "image_tag"),
        CheckConstraint("conc >= 1", name="ck_results_conc"),
        CheckConstraint("gpus >= 1", name="ck_results_gpus"),
        CheckConstraint("tput_per_gpu >= 0", name="ck_results_tput"),
        CheckConstraint("success_rate >= 0 AND success_rate <= 1", name="ck_results_success"),
    )

    # identity
    result_id: Mapped[str] = mapped_column(HASH, primary_key=True)
    recipe_id: Mapped[str] = mapped_column(String)
    fingerprint: Mapped[str] = mapped_column(String)
    job_id: Mapped[str] = mapped_column(String)
    model: Mapped[str] = mapped_column(String)
    model_family: Mapped[str] = mapped_column(String)
    precision: Mapped[str] = mapped_column(String)
    sku: Mapped[str] = mapped_column(String)
    vendor: Mapped[str] = mapped_column(String)
    framework: Mapped[str] = mapped_column(String)
    image: Mapped[str] = mapped_column(String)
    image_tag: Mapped[str] = mapped_column(String)
    image_digest: Mapped[str | None] = mapped_column(String)
    engine_version: Mapped[str | None] = mapped_column(String)
    scenario: Mapped[str] = mapped_column(String)
    isl: Mapped[int | None] = mapped_column(Integer)
    osl: Mapped[int | None] = mapped_column(Integer)
    tp: Mapped[int] = mapped_column(Integer)
    ep: Mapped[int] = mapped_column(Integer)
    pp: Mapped[int] = mapped_column(Integer)
    pcp: Mapped[int] = mapped_column(Integer)
    dp_attn: Mapped[bool] = mapped_column(Boolean)
    kv_offload: Mapped[str] = mapped_column(String)
    kv_offload_backend: Mapped[str | None] = mapped_column(String)
    spec_method: Mapped[str] = mapped_column(String)
    draft_tokens: Mapped[int] = mapped_column(Integer)
    acceptance_mode: Mapped[str] = mapped_column(String)
    target_al: Mapped[float | None] = mapped_column(Float)
    realized_al: Mapped[float | None] = mapped_column(Float)
    thinking: Mapped[str] = mapped_column(String)
    gpus: Mapped[int] = mapped_column(Integer)
    conc: Mapped[int] = mapped_column(Integer)
    deployment: Mapped[str | None] = mapped_column(String)
    deployment_gpus: Mapped[int | None] = mapped_column(Integer)
    disagg: Mapped[bool] = mapped_column(Boolean, server_default=false())
    prefill_workers: Mapped[int | None] = mapped_column(Integer)
    prefill_tp: Mapped[int | None] = mapped_column(Integer)
    prefill_ep: Mapped[int | None] = mapped_column(Integer)
    decode_workers: Mapped[int | None] = mapped_column(Integer)
    decode_tp: Mapped[int | None] = mapped_column(Integer)
    decode_ep: Mapped[int | None] = mapped_column(Integer)
    router: Mapped[str | None] = mapped_column(String)
    kv_transfer: Mapped[str | None] = mapped_column(String)
    # measurement
    tput_per_gpu: Mapped[float] = mapped_column(Float)
    input_tput_per_gpu: Mapped[float] = mapped_column(Float)
    output_tput_per_gpu: Mapped[float] = mapped_column(Float)
    request_throughput: Mapped[float | None] = mapped_column(Float)
    ttft_mean_s: Mapped[float | None] = mapped_column(Float)
    ttft_median_s: Mapped[float | None] = mapped_column(Float)
    ttft_p90_s: Mapped[float | None] = mapped_column(Float)
    ttft_p99_s: Mapped[float | None] = mapped_column(Float)
    tpot_mean_s: Mapped[float | None] = mapped_column(Float)
    tpot_median_s: Mapped[float | None] = mapped_column(Float)
    tpot_p90_s: Mapped[float | None] = mapped_column(Float)
    tpot_p99_s: Mapped[float | None] = mapped_column(Float)
    itl_mean_s: Mapped[float | None] = mapped_column(Float)
    itl_median_s: Mapped[float | None] = mapped_column(Float)
    itl_p90_s: Mapped[float | None] = mapped_column(Float)
    itl_p99_s: Mapped[float | None] = mapped_column(Float)
    e2el_mean_s: Mapped[float | None] = mapped_column(Float)
    e2el_median_s: Mapped[float | None] = mapped_column(Float)
    e2el_p90_s: Mapped[float | None] = mapped_column(Float)
    e2el_p99_s: Mapped[float | None] = mapped_column(Float)
    intvty_mean: Mapped[float | None] = mapped_column(Float)
    intvty_median: Mapped[float | None] = mapped_column(Float)
    intvty_p90: Mapped[float | None] = mapped_column(Float)
    intvty_p99: Mapped[float | None] = mapped_column(Float)
    success_rate: Mapped[float | None] = mapped_column(Float)
    measured_isl: Mapped[float | None] = mapped_column(Float)
    measured_osl: Mapped[float | None] = mapped_column(Float)
    duration_s: Mapped[float | None] = mapped_column(Float)
    num_requests: Mapped[int | None] = mapped_column(Integer)
    failed_requests: Mapped[int | None] = mapped_column(Integer)
    # provenance
    run_id: Mapped[str] = mapped_column(String)
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    client_version: Mapped[str | None] = mapped_column(String)
    simulated: Mapped[bool] = mapped_column(Boolean)
    official: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String)
    valid: Mapped[bool] = mapped_column(Boolean)
    source: Mapped[str] = mapped_column(String)
    artifact_sha256: Mapped[str] = mapped_column(HASH, unique=True)
    artifacts: Mapped[str] = mapped_column(Text)
    slurm_job_id: Mapped[str | None] = mapped_column(String)
    slurm_cluster: Mapped[str | None] = mapped_column(String)
    e2e_intvty_mean: Mapped[float | None] = mapped_column(Float)
    e2e_intvty_median: Mapped[float | None] = mapped_column(Float)
    e2e_intvty_p90: Mapped[float | None] = mapped_column(Float)
    e2e_intvty_p99: Mapped[float | None] = mapped_column(Float)
    pr_number: Mapped[int | None] = mapped_column(Integer, index=True)
    head_sha: Mapped[str | None] = mapped_column(String)
    measured_in: Mapped[str | None] = mapped_column(String)


class QuarantineRow(Base):
    """A rejected input: which file, its hash, and why (one row per file and content:
    the same damaged bytes at two paths are two inputs, e.g. two torn manifests)."""

    __tablename__ = "quarantine"
    __table_args__ = (
        UniqueConstraint("artifact_sha256", "path", name="uq_quarantine_artifact_path"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    artifact_sha256: Mapped[str] = mapped_column(HASH)
    path: Mapped[str] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(String)
    code: Mapped[str] = mapped_column(String)
    reason: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(Integer)
    rejected_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    job_id: Mapped[str | None] = mapped_column(String)


class EvalRow(Base):
    """One scored eval point (``results.eval_record.EvalRecord``): identity, score, provenance."""

    __tablename__ = "eval_results"
    __table_args__ = (
        Index("ix_eval_results_server", "server_fingerprint", "image_digest"),
        Index("ix_eval_results_config", "config_id", "image_digest"),
        CheckConstraint("conc >= 1", name="ck_eval_results_conc"),
    )

    result_id: Mapped[str] = mapped_column(HASH, primary_key=True)
    recipe_id: Mapped[str] = mapped_column(String)
    fingerprint: Mapped[str] = mapped_column(String)
    server_fingerprint: Mapped[str] = mapped_column(String)
    config_id: Mapped[str | None] = mapped_column(HASH)
    job_id: Mapped[str] = mapped_column(String)
    model: Mapped[str] = mapped_column(String)
    model_family: Mapped[str] = mapped_column(String)
    precision: Mapped[str] = mapped_column(String)
    sku: Mapped[str] = mapped_column(String)
    framework: Mapped[str] = mapped_column(String)
    image: Mapped[str] = mapped_column(String)
    image_digest: Mapped[str | None] = mapped_column(String)
    engine_version: Mapped[str | None] = mapped_column(String)
    scenario: Mapped[str] = mapped_column(String)
    isl: Mapped[int | None] = mapped_column(Integer)
    osl: Mapped[int | None] = mapped_column(Integer)
    tp: Mapped[int] = mapped_column(Integer)
    ep: Mapped[int] = mapped_column(Integer)
    dp_attn: Mapped[bool] = mapped_column(Boolean)
    spec_method: Mapped[str] = mapped_column(String)
    thinking: Mapped[str] = mapped_column(String)
    conc: Mapped[int] = mapped_column(Integer)
    task: Mapped[str] = mapped_column(String)
    lm_eval_task: Mapped[str] = mapped_column(String)
    dataset: Mapped[str] = mapped_column(String)
    exact_match: Mapped[float] = mapped_column(Float)
    exact_match_stderr: Mapped[float] = mapped_column(Float)
    scores: Mapped[str] = mapped_column(Text)
    n_original: Mapped[int] = mapped_column(Integer)
    n_effective: Mapped[int] = mapped_column(Integer)
    threshold: Mapped[float] = mapped_column(Float)
    threshold_source: Mapped[str] = mapped_column(Text)
    passed: Mapped[bool] = mapped_column(Boolean)
    lm_eval_version: Mapped[str] = mapped_column(String)
    run_id: Mapped[str] = mapped_column(String)
    attempt: Mapped[int] = mapped_column(Integer)
    simulated: Mapped[bool] = mapped_column(Boolean)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    samples_sha256: Mapped[str] = mapped_column(HASH)
    artifact_sha256: Mapped[str] = mapped_column(HASH, unique=True)
    artifacts: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String, server_default="inferx")
    pr_number: Mapped[int | None] = mapped_column(Integer, index=True)
    head_sha: Mapped[str | None] = mapped_column(String)
    measured_in: Mapped[str | None] = mapped_column(String)


class PullRunRow(Base):
    """One swept pull-request run (``results.pull_runs.PullRun``): what the site needs
    beside its rows, such as the baseline recipe its PR named."""

    __tablename__ = "pull_request_runs"

    run_id: Mapped[str] = mapped_column(String, primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, index=True)
    head_sha: Mapped[str] = mapped_column(String)
    label: Mapped[str | None] = mapped_column(String)
    baseline_recipe: Mapped[str | None] = mapped_column(String)
    baseline_image: Mapped[str | None] = mapped_column(String)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


RESULTS: Table = ResultRow.__table__  # type: ignore[assignment]  # declarative tables are Tables
QUARANTINE: Table = QuarantineRow.__table__  # type: ignore[assignment]  # likewise
EVALS: Table = EvalRow.__table__  # type: ignore[assignment]  # likewise
PULL_RUNS: Table = PullRunRow.__table__  # type: ignore[assignment]  # likewise
