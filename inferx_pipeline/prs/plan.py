"""What a PR runs, in order: its scope's jobs with its label's mode applied.

``pr_plan`` keeps the eval jobs only for ``evals-only``, trims each configuration (job
fingerprint) to its lowest concurrency for ``sweep-enabled``, and picks the canary for a
canary-gated label: the lowest-concurrency non-eval single-node job of the label rules'
``canary-scenarios`` (ties: the smallest job id). The canary runs first and alone; the
rest follows in matrix order once it ends good. Eval jobs (``all-evals``) are chosen when
the matrix is built (``PrRun.matrix_evals``), not here.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.prs.labels import PrRun
from inferx_pipeline.strict import FrozenModel


class PrPlan(FrozenModel):
    """A PR's jobs in run order and how a failure stops them."""

    label: str = Field(description="The primary label.")
    modifiers: tuple[str, ...] = Field(description="Modifier labels.")
    canary: BenchmarkJob | None = Field(description="Runs first and alone; None = no canary.")
    rest: tuple[BenchmarkJob, ...] = Field(description="The other jobs, in matrix order.")
    fail_fast: bool = Field(description="The first failed job stops the rest.")

    @property
    def jobs(self) -> tuple[BenchmarkJob, ...]:
        """Every job in run order: the canary first."""
        return self.rest if self.canary is None else (self.canary, *self.rest)

    def describe(self) -> str:
        """One line: label, job count, canary, failure handling."""
        name = " + ".join((self.label, *self.modifiers))
        if not self.jobs:
            return f"{name}: nothing to run"
        count = f"{len(self.jobs)} job{'s' if len(self.jobs) != 1 else ''}"
        order = (
            "no canary"
            if self.canary is None
            else f"canary {self.canary.job_id} first, then {len(self.rest)} more"
        )
        failure = "stop at the first failure" if self.fail_fast else "continue past failures"
        return f"{name}: {count}, {order}; {failure}"


def pr_plan(jobs: Sequence[BenchmarkJob], mode: PrRun) -> PrPlan:
    """The plan for ``jobs`` (a PR's scope, in matrix order) under ``mode``. Pure."""
    kept = [job for job in jobs if job.run_eval] if mode.evals_only else list(jobs)
    if mode.trim == "lowest-concurrency":
        kept = lowest_concurrency(kept)
    canary = pick_canary(kept, mode) if mode.canary else None
    rest = tuple(job for job in kept if job is not canary)
    return PrPlan(
        label=mode.label,
        modifiers=mode.modifiers,
        canary=canary,
        rest=rest,
        fail_fast=mode.fail_fast,
    )


def lowest_concurrency(jobs: Sequence[BenchmarkJob]) -> list[BenchmarkJob]:
    """One job per configuration (fingerprint): its lowest concurrency (the first, on a
    tie), in matrix order."""
    best: dict[str, BenchmarkJob] = {}
    for job in jobs:
        held = best.get(job.fingerprint)
        if held is None or job.conc < held.conc:
            best[job.fingerprint] = job
    keep = {id(job) for job in best.values()}
    return [job for job in jobs if id(job) in keep]


def pick_canary(jobs: Sequence[BenchmarkJob], mode: PrRun) -> BenchmarkJob | None:
    """The lowest-concurrency non-eval single-node job of ``mode``'s canary scenarios
    (ties: the smallest job id); None when no job qualifies."""
    candidates = [
        job
        for job in jobs
        if not job.run_eval and not job.multinode and job.scenario in mode.canary_scenarios
    ]
    return min(candidates, key=lambda job: (job.conc, job.job_id), default=None)
