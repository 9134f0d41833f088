"""Group jobs by server identity: one server per group, started once for all its concurrencies.

A group holds every selected job sharing ``server_key`` (the fingerprint: everything but
concurrency), in ascending concurrency. Its server is built from the highest-concurrency
job, since max-num-seqs rules grow with concurrency and the largest batch must fit.

Eval jobs run after the throughput points of the same server identity, on that server:
an eval job whose fingerprint, read as a throughput job, is a group's server key (the
same engine, arguments, acceptance and context) joins that group when the group's batch
limit admits the eval's concurrency. Other eval jobs (a throughput twin with synthetic
acceptance or a smaller context than the eval's max-length, or none selected: eval-only
sweeps) form groups of their own. ``twin_key`` is the configuration an eval judges: its
throughput twin's server identity, whichever server the eval ran on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inferx_pipeline.errors import MatrixError
from inferx_pipeline.matrix.job import BenchmarkJob, throughput_max_model_len


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """Jobs served by one server: throughput points ascending by concurrency, then evals."""

    server_key: str
    jobs: tuple[BenchmarkJob, ...]

    @property
    def spec_job(self) -> BenchmarkJob:
        """The job the server spec is built from: the highest-concurrency throughput job
        (an eval-only group: the highest-concurrency eval)."""
        points = self.points or self.evals
        return points[-1]

    @property
    def points(self) -> tuple[BenchmarkJob, ...]:
        """The throughput jobs, ascending by concurrency."""
        return tuple(job for job in self.jobs if not job.run_eval)

    @property
    def evals(self) -> tuple[BenchmarkJob, ...]:
        """The eval jobs, ascending by concurrency (run after the points)."""
        return tuple(job for job in self.jobs if job.run_eval)

    @property
    def name(self) -> str:
        """``<recipe>/<scenario>/<layout>`` (+ ``/eval`` for an eval-only group)."""
        job = self.jobs[0]
        suffix = "/eval" if job.run_eval else ""
        return f"{job.recipe_id}/{job.scenario_label}/{job.label}{suffix}"

    @property
    def concurrencies(self) -> tuple[int, ...]:
        return tuple(job.conc for job in self.jobs)


def throughput_key(job: BenchmarkJob) -> str:
    """The server identity of ``job`` read as a throughput job (an eval job's twin's key)."""
    return job.evolve(run_eval=False).server_key if job.run_eval else job.server_key


def twin_key(job: BenchmarkJob) -> str:
    """The server identity of eval ``job``'s throughput twin (its context as the matrix
    gave the twin, before the eval raised it); a throughput job's own key."""
    if not job.run_eval:
        return job.server_key
    twin = job.evolve(run_eval=False, max_model_len=throughput_max_model_len(job.isl, job.osl))
    return twin.server_key


def group_jobs(jobs: Iterable[BenchmarkJob]) -> list[ServerGroup]:
    """Groups in first-seen order, each ascending by concurrency, evals seated (pure).

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
    groups = {key: tuple(points[c] for c in sorted(points)) for key, points in by_key.items()}
    hosts = {key: _host(jobs, groups) for key, jobs in groups.items()}
    seated = {key: list(jobs) for key, jobs in groups.items() if hosts[key] is None}
    for key, host in hosts.items():
        if host is not None:
            seated[host] += groups[key]
    return [ServerGroup(server_key=key, jobs=tuple(jobs)) for key, jobs in seated.items()]


def _host(
    jobs: tuple[BenchmarkJob, ...], groups: dict[str, tuple[BenchmarkJob, ...]]
) -> str | None:
    """The throughput group whose server runs these eval jobs; None = their own server."""
    if not jobs[0].run_eval:
        return None
    key = throughput_key(jobs[0])
    points = groups.get(key)
    if points is None:
        return None
    limit = points[-1].max_num_seqs
    return key if limit is None or limit >= jobs[-1].conc else None
