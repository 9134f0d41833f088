"""Failed sweep runs: which jobs failed, whether to retry, and the ledger that remembers.

``decide`` is pure: the failed jobs of one run plus the retry policy
(``catalog/retry-policy.yaml``) and how many retries came before -> retry or not, and
why. ``RetryLedger`` appends one JSON line per failed run (never rewrites), so a
person sees every failure and every decision even after the runs are gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.catalog import read_model
from inferx_pipeline.errors import StoreError
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run
from inferx_pipeline.sweep.status import GOOD_STATUSES, JobStatus

POLICY_FILE = "retry-policy.yaml"


class RetryPolicy(FrozenModel):
    """Which failures are retried, and how often (data: ``catalog/retry-policy.yaml``)."""

    retry_statuses: frozenset[JobStatus] = Field(description="Transient failure statuses.")
    max_retries: int = Field(ge=0, description="Automatic retries of the same partitions.")
    source: str
    rationale: dict[str, str] = Field(default_factory=dict)


def load_retry_policy(catalog_dir: Path) -> RetryPolicy:
    """``catalog_dir/retry-policy.yaml``; CatalogError naming the file when unreadable."""
    return read_model(catalog_dir / POLICY_FILE, RetryPolicy, "retry policy")


class FailedJob(FrozenModel):
    """One job of a failed run that has no good result."""

    job_id: str
    status: JobStatus
    message: str = ""


class RetryDecision(FrozenModel):
    """Whether to retry a failed run, and why."""

    retry: bool
    reason: str


def failed_jobs(artifacts: ArtifactStore, run_id: str) -> list[FailedJob]:
    """The jobs of sweep run ``run_id`` that did not end good (from its run record).

    Empty when the run left no record (it broke before its sweep finished).
    """
    record = load_run(artifacts.root, run_id)
    outcomes = record.outcomes if record is not None else ()
    return [
        FailedJob(job_id=o.job_id, status=o.status, message=o.message)
        for o in outcomes
        if o.status not in GOOD_STATUSES
    ]


def decide(
    failed: Iterable[FailedJob], *, retries_so_far: int, policy: RetryPolicy
) -> RetryDecision:
    """Retry when every failure is transient and the retry budget is not spent (pure)."""
    jobs = list(failed)
    if retries_so_far >= policy.max_retries:
        return RetryDecision(
            retry=False, reason=f"retried {retries_so_far} times already (max {policy.max_retries})"
        )
    if not jobs:
        return RetryDecision(
            retry=False, reason="no failed job was recorded: the run itself broke; see its logs"
        )
    lasting = sorted({job.status for job in jobs} - policy.retry_statuses)
    if lasting:
        return RetryDecision(
            retry=False, reason=f"not transient: {', '.join(lasting)} would fail the same way again"
        )
    statuses = ", ".join(sorted({job.status for job in jobs}))
    return RetryDecision(retry=True, reason=f"{len(jobs)} transient failures ({statuses})")


class LedgerEntry(FrozenModel):
    """One failed run: what failed, what was decided."""

    run_id: str
    sku: str
    partitions: dict[str, str] = Field(description="The run's partition tags.")
    failed: tuple[FailedJob, ...]
    decision: RetryDecision
    retries_so_far: int
    recorded_at: float = Field(default_factory=time.time, description="Unix seconds.")


class RetryLedger:
    """Append-only JSON lines of ``LedgerEntry`` at ``path`` (created on first write)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entry: LedgerEntry) -> None:
        """Add ``entry`` as one line; StoreError when the file cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(entry.model_dump_json() + "\n")
        except OSError as err:
            raise StoreError(f"{self.path}: cannot append to the retry ledger ({err})") from err

    def entries(self) -> Iterator[LedgerEntry]:
        """Every entry, oldest first; StoreError naming the line of a corrupt entry."""
        if not self.path.is_file():
            return
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                yield LedgerEntry.model_validate(json.loads(line))
            except (ValueError, ValidationError) as err:
                raise StoreError(f"{self.path}:{number}: not a ledger entry ({err})") from err
