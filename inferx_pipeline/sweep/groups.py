"""Group jobs by server identity: one server per group, started once for all its concurrencies.

A group holds every selected job sharing ``server_key`` (the fingerprint: everything but
concurrency), in ascending concurrency. Its server is built from the highest-concurrency
job, since max-num-seqs rules grow with concurrency and the largest batch must fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inferx_pipeline.errors import MatrixError
from inferx_pipeline.matrix.job import BenchmarkJob


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """Jobs served by one server, ascending by concurrency (at least one)."""

    server_key: str
    jobs: tuple[BenchmarkJob, ...]

    @property
    def spec_job(self) -> BenchmarkJob:
        """The job the server spec is built from: the highest concurrency."""
        return self.jobs[-1]

    @property
    def name(self) -> str:
        """``<recipe>/<scenario>/<layout>`` (+ ``/eval``): the job id without the conc."""
        job = self.jobs[0]
        suffix = "/eval" if job.run_eval else ""
        return f"{job.recipe_id}/{job.scenario_label}/{job.label}{suffix}"

    @property
    def concurrencies(self) -> tuple[int, ...]:
        return tuple(job.conc for job in self.jobs)


def group_jobs(jobs: Iterable[BenchmarkJob]) -> list[ServerGroup]:
    """Groups in first-seen order, each ascending by concurrency (pure).

    Two jobs with the same server key and concurrency are a MatrixError naming both.
    """
    by_key: dict[str, dict[int, BenchmarkJob]] = {}
    for job in jobs:
        points = by_key.setdefault(job.server_key, {})
        if job.conc in points:
            raise MatrixError(
                f"jobs {points[job.conc].job_id} and {job.job_id} are the same point "
                f"(server {job.server_key[:12]}, conc {job.conc}); select each once"
            )
        points[job.conc] = job
    return [
        ServerGroup(server_key=key, jobs=tuple(points[c] for c in sorted(points)))
        for key, points in by_key.items()
    ]
