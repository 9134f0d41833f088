"""``SweepSummary``: what ``inferx sweep --format json`` prints, one document for scripts.

A view of the ``SweepReport`` that scripts can rely on: per job its status, the attempt
its result comes from and where that result's file is, without the RawResult itself
(read it from ``result_path``). The field descriptions are the documentation: ``inferx
sweep --help`` lists them (``fields_help``).
"""

from __future__ import annotations

import textwrap

from pydantic import Field

from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.artifacts import EVAL_RESULT, RESULT, ArtifactStore
from inferx_pipeline.sweep.report import JobOutcome, SweepReport
from inferx_pipeline.sweep.status import JobStatus


class JobSummary(FrozenModel):
    """One job's outcome."""

    job_id: str = Field(description="The job's id (as `inferx matrix` lists it).")
    recipe_id: str = Field(description="The recipe the job came from.")
    sku: str = Field(description="The SKU it ran on.")
    conc: int = Field(description="Its concurrency.")
    status: JobStatus = Field(description="ok, reused, or the failure (e.g. result-invalid).")
    attempt: int | None = Field(
        description="Attempt number of its final attempt (reused: the attempt reused); "
        "null when no attempt was recorded (e.g. cancelled before it started)."
    )
    reused: bool = Field(description="Whether an earlier run's result was reused.")
    message: str = Field(description="Why it failed, or what was reused; empty when ok.")
    result_path: str | None = Field(
        description="Absolute path of the result file of that attempt (a RawResult JSON; an "
        "eval job: its EvalResult JSON), failed ones included (status says whether it "
        "counts); null when the attempt left none."
    )
    slurm_job: str | None = Field(
        description="cluster:job id of the Slurm allocation it ran in; null off Slurm."
    )


class SweepSummary(FrozenModel):
    """One sweep: its run, every selected job's outcome in order, and the counts."""

    run_id: str = Field(
        description="The sweep's run id (its record: runs/<run_id>.json in the artifact directory)."
    )
    ok: bool = Field(description="Whether every job ended ok or reused (then exit 0).")
    server_launches: int = Field(description="Servers started, restarts included.")
    jobs: tuple[JobSummary, ...] = Field(description="One entry per selected job, in order.")
    counts: dict[str, int] = Field(description="Jobs per status.")
    notes: tuple[str, ...] = Field(description="What went wrong outside any job.")


def summarize(report: SweepReport, store: ArtifactStore) -> SweepSummary:
    """The summary of ``report``; result paths point into ``store`` (where the sweep wrote)."""
    return SweepSummary(
        run_id=report.run_id,
        ok=report.ok,
        server_launches=report.server_launches,
        jobs=tuple(_job(outcome, store) for outcome in report.outcomes),
        counts=dict(sorted(report.counts().items())),
        notes=report.notes,
    )


def _job(outcome: JobOutcome, store: ArtifactStore) -> JobSummary:
    manifest = outcome.manifest
    artifacts = manifest.artifacts if manifest else {}
    sha = artifacts.get(RESULT) or artifacts.get(EVAL_RESULT)
    path = store.path(sha).absolute() if sha else None
    return JobSummary(
        job_id=outcome.job_id,
        recipe_id=outcome.recipe_id,
        sku=outcome.sku,
        conc=outcome.conc,
        status=outcome.status,
        attempt=manifest.attempt if manifest else None,
        reused=outcome.status == "reused",
        message=outcome.message,
        result_path=str(path) if path else None,
        slurm_job=outcome.slurm_job or None,
    )


def fields_help() -> str:
    """The summary's fields with their descriptions, as ``--help`` text of 78 columns.

    Its first line is click's ``\\b`` marker, so click prints the lines as they are."""
    fields = [(name, f.description) for name, f in SweepSummary.model_fields.items()]
    fields += [(f"jobs[].{name}", f.description) for name, f in JobSummary.model_fields.items()]
    lines = [
        textwrap.fill(f"{name}: {text}", width=78, initial_indent="  ", subsequent_indent="      ")
        for name, text in fields
    ]
    return "\n".join(["\b", "--format json prints one JSON document on stdout:", *lines])
