"""What a sweep returns and reports as it goes: options, per-job outcomes, progress events.

``SweepReport`` is the contract with the CLI and the Dagster layer: one ``JobOutcome``
per selected job, in the order the jobs were given, each with its status, the attempt
manifest (artifact hashes) and, for ``ok`` and ``reused``, the RawResult to ingest (an
eval job: its ``EvalResult``).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from pydantic import Field

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.strict import FrozenModel, StrictModel
from inferx_pipeline.sweep.artifacts import AttemptManifest
from inferx_pipeline.sweep.groups import ServerGroup
from inferx_pipeline.sweep.status import GOOD_STATUSES, JobStatus


class SweepOptions(StrictModel):
    """How each point is measured and how the sweep treats failures."""

    prompts_per_conc: int = Field(
        default=10, ge=1, description="Measured requests (sessions) per unit of concurrency."
    )
    num_prompts: int | None = Field(
        default=None,
        ge=1,
        description="Measured requests per point regardless of conc (smoke runs); "
        "None = prompts_per_conc x conc.",
    )
    seed: int = Field(default=0, description="Dataset seed: same seed, same requests.")
    warmup_prompts: int = Field(
        default=0, ge=0, description="Requests sent once after health, before the first point."
    )
    point_deadline_s: float | None = Field(
        default=None, gt=0, description="Stop one point after this long (then result-invalid)."
    )
    request_timeout_s: float = Field(
        default=600.0, gt=0, description="Longest silence within one response, s."
    )
    think_time_scale: float = Field(
        default=1.0, ge=0, description="Agentic replay: multiplier on think times."
    )
    max_turns: int | None = Field(
        default=None, gt=0, description="Agentic replay: cut sessions at this turn."
    )
    force: bool = Field(default=False, description="Measure even when a good result exists.")
    fail_fast: bool = Field(default=False, description="Cancel the rest after one failure.")


class JobOutcome(FrozenModel):
    """The final state of one job in a sweep."""

    job_id: str
    fingerprint: str
    conc: int
    sku: str
    recipe_id: str
    status: JobStatus
    message: str = ""
    attempts: tuple[int, ...] = Field(
        default=(), description="Attempt numbers recorded by this sweep (a retry adds one)."
    )
    manifest: AttemptManifest | None = Field(
        default=None, description="The final attempt (for reused: the attempt reused)."
    )
    result: RawResult | None = Field(
        default=None, description="The measured (or reused) RawResult; None if none was measured."
    )
    eval: EvalResult | None = Field(
        default=None, description="An eval job's score (ok); None for throughput points."
    )
    exit_code: int | None = None
    oom_killed: bool = False
    log_tail: tuple[str, ...] = ()

    @property
    def good(self) -> bool:
        return self.status in GOOD_STATUSES

    @property
    def slurm_job(self) -> str:
        """``cluster:job id`` of the Slurm allocation its attempt ran in; "" off Slurm."""
        where = self.manifest.provenance if self.manifest else {}
        job_id = where.get("slurm_job_id", "")
        return f"{where.get('slurm_cluster', '')}:{job_id}".lstrip(":") if job_id else ""

    @classmethod
    def of(cls, job: BenchmarkJob, status: JobStatus, message: str = "") -> JobOutcome:
        """An outcome for ``job`` with no attempt (reused results and cancellations add theirs)."""
        return cls(
            job_id=job.job_id,
            fingerprint=job.fingerprint,
            conc=job.conc,
            sku=job.sku,
            recipe_id=job.recipe_id,
            status=status,
            message=message,
        )


class PullRef(FrozenModel):
    """The pull request an unofficial run sweeps: its number and the head commit swept."""

    number: int = Field(ge=1, description="Pull request number.")
    head_sha: str = Field(pattern=r"^[0-9a-f]{7,64}$", description="Head commit swept.")

    def metadata(self) -> dict[str, int | str]:
        """The RawResult metadata keys that mark a point as this PR's (results ingest them)."""
        return {"pr_number": self.number, "head_sha": self.head_sha}


class SweepReport(FrozenModel):
    """Every job's outcome plus what the sweep cost."""

    run_id: str
    pull: PullRef | None = Field(
        default=None, description="The pull request of an unofficial run; None: official."
    )
    outcomes: tuple[JobOutcome, ...]
    groups: int = Field(description="Server groups the jobs fell into.")
    server_launches: int = Field(description="Servers started (restarts included).")
    started_at: float = Field(description="Unix seconds.")
    finished_at: float = Field(description="Unix seconds.")
    notes: tuple[str, ...] = Field(
        default=(),
        description="What went wrong outside any job, e.g. servers of dead runs that could "
        "not be stopped.",
    )
    interrupted: bool = Field(
        default=False,
        description="Stopped by SIGINT or SIGTERM (Ctrl-C, a cancelled Dagster run) before "
        "every job ended.",
    )

    @property
    def ok(self) -> bool:
        """Whether every job ended ok or reused."""
        return all(outcome.good for outcome in self.outcomes)

    def counts(self) -> dict[str, int]:
        """Jobs per status."""
        return dict(Counter(outcome.status for outcome in self.outcomes))

    def results(self) -> list[RawResult]:
        """The RawResults of ok and reused jobs, in job order."""
        return [o.result for o in self.outcomes if o.good and o.result is not None]


class SweepProgress(Protocol):
    """Callbacks as a sweep advances (all called from the sweeping thread)."""

    def group_started(self, group: ServerGroup, index: int, total: int) -> None: ...

    def point_started(self, job: BenchmarkJob) -> None: ...

    def point_finished(self, outcome: JobOutcome) -> None: ...

    def group_finished(self, group: ServerGroup) -> None: ...


class NullProgress:
    """Reports nothing."""

    def group_started(self, group: ServerGroup, index: int, total: int) -> None:
        return None

    def point_started(self, job: BenchmarkJob) -> None:
        return None

    def point_finished(self, outcome: JobOutcome) -> None:
        return None

    def group_finished(self, group: ServerGroup) -> None:
        return None
