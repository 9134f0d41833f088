"""One record per sweep run: every job's final status, including those that never started.

Attempt manifests exist only for points that reached a server; a job whose group could
not launch (no host, no adapter) has none. ``save_run`` writes the whole outcome list of
a sweep as ``runs/<run_id>.json`` under the artifact directory (write-once), so a
failed run's jobs can be read back after the run is gone: the retry ledger does.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.errors import StoreError
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.status import JobStatus


class OutcomeLine(FrozenModel):
    """One job's final state in a run."""

    job_id: str
    status: JobStatus
    message: str = ""
    attempt: int | None = Field(default=None, description="The attempt recorded, if any.")
    provenance: dict[str, str] = Field(
        default_factory=dict,
        description="Where that attempt's server ran (its manifest's provenance, e.g. the "
        "Slurm job id and cluster); empty without one.",
    )


class RunRecord(FrozenModel):
    """A sweep run: when, and how each job ended."""

    run_id: str
    started_at: float = Field(description="Unix seconds.")
    finished_at: float = Field(description="Unix seconds.")
    server_launches: int
    outcomes: tuple[OutcomeLine, ...]
    notes: tuple[str, ...] = Field(default=(), description="As ``SweepReport.notes``.")
    interrupted: bool = Field(default=False, description="As ``SweepReport.interrupted``.")


def _path(artifacts_root: Path, run_id: str) -> Path:
    return artifacts_root / "runs" / f"{run_id}.json"


def save_run(report: SweepReport, artifacts_root: Path) -> Path:
    """Write ``report``'s record; StoreError if that run was recorded already or on I/O errors."""
    record = RunRecord(
        run_id=report.run_id,
        started_at=report.started_at,
        finished_at=report.finished_at,
        server_launches=report.server_launches,
        notes=report.notes,
        interrupted=report.interrupted,
        outcomes=tuple(
            OutcomeLine(
                job_id=o.job_id,
                status=o.status,
                message=o.message,
                attempt=o.manifest.attempt if o.manifest else None,
                provenance=o.manifest.provenance if o.manifest else {},
            )
            for o in report.outcomes
        ),
    )
    path = _path(artifacts_root, report.run_id)
    try:
        write_atomic(path, record.model_dump_json(indent=1).encode(), exclusive=True)
    except OSError as err:
        raise StoreError(f"{path}: cannot record sweep run {report.run_id} ({err})") from err
    return path


def load_run(artifacts_root: Path, run_id: str) -> RunRecord | None:
    """The record of run ``run_id``; None when it has none (StoreError when unreadable)."""
    path = _path(artifacts_root, run_id)
    if not path.is_file():
        return None
    try:
        return RunRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as err:
        raise StoreError(f"{path}: not a sweep run record ({err}); move it aside") from err
