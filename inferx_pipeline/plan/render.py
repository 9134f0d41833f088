"""A matrix as text: its jobs as table, JSON, CSV (each with the server command line), or
its InferenceX rows (eval fields included).

The command column comes from the job's engine adapter (a multinode job's: its first
worker's, the JSON adds the whole deployment); a framework without an adapter yet, or a
multinode engine inferx does not launch, shows why instead of failing the whole listing.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.multinode import describe, job_spec
from inferx_pipeline.errors import InferxError
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.plan.build import LoadedMatrix

Format = Literal["table", "json", "csv", "inferencex"]
T = TypeVar("T")


def _spec(job: BenchmarkJob, catalog: Catalog) -> ServerSpec | str:
    try:
        return job_spec(job, catalog.sku(job.sku))
    except InferxError as err:
        return f"({str(err).split(': ', 1)[-1]})"


def _command(spec: ServerSpec | str) -> tuple[str, dict[str, str]]:
    if isinstance(spec, str):
        return spec, {}
    return shlex.join(spec.argv), dict(spec.env)


def server_command(job: BenchmarkJob, catalog: Catalog) -> tuple[str, dict[str, str]]:
    """(shell-quoted argv, env) of the job's server, or ('(reason)', {}) when there is none."""
    return _command(_spec(job, catalog))


def _per_server(jobs: Sequence[BenchmarkJob], text: Callable[[BenchmarkJob], T]) -> list[T]:
    """``text`` of each job, computed once per server (fingerprint).

    A sweep starts one server per fingerprint from its first job, whatever the
    concurrency, so that job's text is every one's (and most of a listing's time).
    """
    done: dict[str, T] = {}
    texts: list[T] = []
    for job in jobs:
        if job.fingerprint not in done:
            done[job.fingerprint] = text(job)
        texts.append(done[job.fingerprint])
    return texts


def _json(jobs: Sequence[BenchmarkJob], catalog: Catalog) -> str:
    def server(job: BenchmarkJob) -> dict[str, Any]:
        spec = _spec(job, catalog)  # once: a multinode job's spec lays out its deployment
        command, env = _command(spec)
        doc: dict[str, Any] = {"server_command": command, "server_env": env}
        if job.workers is not None:
            deployed = spec.deployment if isinstance(spec, ServerSpec) else None
            doc["deployment"] = deployed.model_dump(mode="json") if deployed else None
        return doc

    docs: list[dict[str, Any]] = []
    for job, served in zip(jobs, _per_server(jobs, server), strict=True):
        doc = job.model_dump(mode="json")
        doc["job_id"] = job.job_id
        doc.update(served)
        docs.append(doc)
    return json.dumps(docs, indent=1)


_CSV_COLUMNS = ("job_id", "recipe", "sku", "framework", "scenario", "conc", "fingerprint")


def _csv(jobs: Sequence[BenchmarkJob], catalog: Catalog) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow((*_CSV_COLUMNS, "server_command"))
    commands = _per_server(jobs, lambda job: server_command(job, catalog)[0])
    for job, command in zip(jobs, commands, strict=True):
        fields = (job.job_id, job.recipe_id, job.sku, job.engine.framework, job.scenario)
        writer.writerow((*fields, job.conc, job.fingerprint, command))
    return out.getvalue()


def _server_lines(job: BenchmarkJob, catalog: Catalog) -> list[str]:
    if job.workers is not None:  # multinode: the Slurm job's nodes, router and workers
        return [f"    {line}" for line in describe(job, catalog.sku(job.sku))]
    command, env = server_command(job, catalog)
    env_text = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return [f"    {env_text + ' ' if env_text else ''}{command}"]


def _table(jobs: Sequence[BenchmarkJob], catalog: Catalog) -> str:
    lines = [f"{len(jobs)} jobs"]
    servers = _per_server(jobs, lambda job: _server_lines(job, catalog))
    for job, server in zip(jobs, servers, strict=True):
        lines.append(f"{job.job_id}  sku={job.sku} conc={job.conc} fp={job.fingerprint[:12]}")
        lines += server
    return "\n".join(lines)


def _inferencex(matrix: LoadedMatrix, catalog: Catalog) -> str:
    return json.dumps(matrix.inferencex_rows(), indent=1)


def _of_jobs(
    text: Callable[[Sequence[BenchmarkJob], Catalog], str],
) -> Callable[[LoadedMatrix, Catalog], str]:
    return lambda matrix, catalog: text(matrix.jobs, catalog)


RENDERERS: dict[Format, Callable[[LoadedMatrix, Catalog], str]] = {
    "table": _of_jobs(_table),
    "json": _of_jobs(_json),
    "csv": _of_jobs(_csv),
    "inferencex": _inferencex,
}


def render(matrix: LoadedMatrix, fmt: Format, catalog: Catalog) -> str:
    """``matrix`` as text in format ``fmt`` (the jobs it runs; inferencex: all its rows)."""
    return RENDERERS[fmt](matrix, catalog)
