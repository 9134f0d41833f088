"""What one sweep partition shows: the numbers of its cell, not of the whole run.

A cell (SKU, concurrency, image) holds the SKU's jobs at that concurrency which run at
that image. Its materialization carries float metadata for the cell's headline job
(the highest throughput per GPU among its good results), so the asset's Plots tab
draws throughput and latency over images and concurrencies; a table with a schema
lists every job of the cell; a reused point links the Dagster run that measured it. A
cell with eval jobs carries their scores: a table of each, and the lowest one's numbers
(what the threshold judges: exact match and standard error per filter, documents, task,
threshold, passed). Every cell says how big its points were: the run's prompts per
concurrency, the cell's number of prompts, the validity policy version and minimum
duration, the launcher; and the headline result's measured prompts and seconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import dagster as dg

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.defs.config import PointSize
from inferx_pipeline.engines.multinode import deployment_fields
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from inferx_pipeline.sweep.report import JobOutcome

JOBS_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("job", "string", description="Recipe / scenario / config / conc."),
        dg.TableColumn("status", "string", description="ok, reused, or why not."),
        dg.TableColumn("tok/s/GPU", "float", description="Input + output tokens per s per GPU."),
        dg.TableColumn("tok/s/user", "float", description="Interactivity: 1000 / TPOT p50 ms."),
        dg.TableColumn("TTFT p50 ms", "float"),
        dg.TableColumn("TPOT p50 ms", "float"),
        dg.TableColumn("E2EL p50 ms", "float"),
        dg.TableColumn("simulated", "bool"),
        dg.TableColumn("measured in run", "string", description="The run that measured it."),
        dg.TableColumn("slurm job", "string", description="cluster:job id of its allocation."),
        dg.TableColumn("result", "string", description="The RawResult JSON in the artifacts."),
    ]
)


EVALS_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("job", "string", description="The eval job."),
        dg.TableColumn("task", "string", description="Task (catalog/evals.yaml)."),
        dg.TableColumn("scores", "string", description="Exact match +/- stderr per filter."),
        dg.TableColumn("documents", "int", description="Documents scored."),
        dg.TableColumn("threshold", "float", description="Lowest passing exact match."),
        dg.TableColumn("passed", "bool", description="Every filter reached the threshold."),
    ]
)


def _floats(result: RawResult, gpus: int) -> dict[str, float]:
    """The headline numbers of one result (absent ones left out)."""
    values = {
        "tok/s/GPU": result.total_token_throughput / gpus,
        "tok/s/user": result.median_intvty,
        "TTFT p50 ms": result.median_ttft_ms,
        "TPOT p50 ms": result.median_tpot_ms,
        "E2EL p50 ms": result.median_e2el_ms,
        "AL realized": result.acceptance.acceptance_length if result.acceptance else None,
    }
    return {name: round(value, 3) for name, value in values.items() if value is not None}


def _result_path(outcome: JobOutcome, artifacts: ArtifactStore) -> str:
    sha = outcome.manifest.artifacts.get(RESULT) if outcome.manifest else None
    return str(artifacts.path(sha)) if sha else ""


def _row(outcome: JobOutcome, job: BenchmarkJob, artifacts: ArtifactStore) -> dg.TableRecord:
    result = outcome.result if outcome.good else None
    numbers = _floats(result, job.gpus) if result else {}
    return dg.TableRecord(
        {
            "job": outcome.job_id,
            "status": outcome.status,
            **{name: numbers.get(name) for name in ("tok/s/GPU", "tok/s/user")},
            **{name: numbers.get(name) for name in ("TTFT p50 ms", "TPOT p50 ms", "E2EL p50 ms")},
            "simulated": bool(result.metadata.get("simulated")) if result else None,
            "measured in run": outcome.manifest.run_id if outcome.manifest else "",
            "slurm job": outcome.slurm_job,
            "result": _result_path(outcome, artifacts),
        }
    )


def _headline(
    outcomes: Sequence[tuple[JobOutcome, BenchmarkJob]],
) -> tuple[JobOutcome, BenchmarkJob, RawResult] | None:
    good = [(o, j, o.result) for o, j in outcomes if o.good and o.result is not None]
    if not good:
        return None
    return max(good, key=lambda item: item[2].total_token_throughput / item[1].gpus)


def _eval_row(job_id: str, scored: EvalResult) -> dg.TableRecord:
    scores = "; ".join(f"{f.filter} {f.exact_match:.3f} +/- {f.stderr:.3f}" for f in scored.filters)
    return dg.TableRecord(
        {
            "job": job_id,
            "task": scored.task,
            "scores": scores,
            "documents": scored.n_effective,
            "threshold": scored.threshold,
            "passed": scored.passed,
        }
    )


def eval_metadata(
    outcomes: Sequence[tuple[JobOutcome, BenchmarkJob]],
) -> dict[str, dg.MetadataValue]:
    """The eval scores among ``outcomes``: every one as a table row, the lowest one's
    numbers as values (the Plots tab charts them); {} when the cell has no eval job."""
    scored = [(o.job_id, o.eval) for o, _ in outcomes if o.eval is not None]
    if not scored:
        return {}
    job_id, lowest = min(scored, key=lambda item: item[1].exact_match)
    shown: dict[str, dg.MetadataValue] = {
        "evals": dg.MetadataValue.table(
            [_eval_row(job, result) for job, result in scored], schema=EVALS_SCHEMA
        ),
        "eval_job": dg.MetadataValue.text(job_id),
        "eval_task": dg.MetadataValue.text(lowest.task),
        "eval_documents": dg.MetadataValue.int(lowest.n_effective),
        "eval_threshold": dg.MetadataValue.float(lowest.threshold),
        "eval_passed": dg.MetadataValue.bool(lowest.passed),
    }
    for score in lowest.filters:
        shown[f"eval_exact_match[{score.filter}]"] = dg.MetadataValue.float(score.exact_match)
        shown[f"eval_stderr[{score.filter}]"] = dg.MetadataValue.float(score.stderr)
    return shown


def cell_metadata(
    cell: Cell,
    outcomes: Sequence[tuple[JobOutcome, BenchmarkJob]],
    artifacts: ArtifactStore,
    is_dagster_run: Callable[[str], bool],
) -> dict[str, dg.MetadataValue]:
    """Metadata of ``cell``'s partition from its jobs' ``outcomes`` (in job order).

    ``is_dagster_run`` tells whether a run id is a run of this instance (then a reused
    point links it; a point measured by ``inferx sweep`` names its sweep run instead).
    """
    shown: dict[str, dg.MetadataValue] = {
        "image": dg.MetadataValue.text(cell.image),
        "jobs": dg.MetadataValue.int(len(outcomes)),
        "status_counts": dg.MetadataValue.json(dict(Counter(o.status for o, _ in outcomes))),
        "per_job": dg.MetadataValue.table(
            [_row(outcome, job, artifacts) for outcome, job in outcomes], schema=JOBS_SCHEMA
        ),
        **eval_metadata(outcomes),
    }
    best = _headline(outcomes)
    if best is None:
        return shown
    outcome, job, result = best
    shown |= {name: dg.MetadataValue.float(v) for name, v in _floats(result, job.gpus).items()}
    shown |= {
        "headline_job": dg.MetadataValue.text(outcome.job_id),
        "measured_prompts": dg.MetadataValue.int(result.num_prompts),
        "measured_s": dg.MetadataValue.float(round(result.duration, 3)),
        "simulated": dg.MetadataValue.bool(bool(result.metadata.get("simulated"))),
        "reused": dg.MetadataValue.bool(outcome.status == "reused"),
        "artifacts": dg.MetadataValue.path(_result_path(outcome, artifacts)),
    }
    if outcome.slurm_job:
        shown["slurm_job"] = dg.MetadataValue.text(outcome.slurm_job)
    shown |= _deployment(job, result.metadata)
    source = outcome.manifest.run_id if outcome.manifest else None
    if outcome.status == "reused" and source is not None:
        shown["measured_in"] = (
            dg.MetadataValue.dagster_run(source)
            if is_dagster_run(source)
            else dg.MetadataValue.text(f"sweep run {source}")
        )
    return shown


def _deployment(job: BenchmarkJob, measured: Mapping[str, object]) -> dict[str, dg.MetadataValue]:
    """A multinode job's workers, router and KV transfer, and where its workers ran."""
    fields = deployment_fields(job)
    if not fields:
        return {}
    shown: dict[str, dg.MetadataValue] = {
        name: dg.MetadataValue.text(str(fields[name]))
        for name in ("deployment", "router", "kv_transfer")
        if fields[name] is not None
    }
    shown["deployment_gpus"] = dg.MetadataValue.int(job.gpus)
    if measured.get("workers"):
        shown["workers"] = dg.MetadataValue.text(str(measured["workers"]))
    return shown


def point_metadata(point: PointSize, conc: int) -> dict[str, dg.MetadataValue]:
    """How big the cell's points were asked to be (at concurrency ``conc``), by which
    launcher, judged under which validity policy: a demo-sized point shows as one."""
    return {
        "prompts_per_conc": dg.MetadataValue.int(point.options.prompts_per_conc),
        "num_prompts": dg.MetadataValue.int(point.prompts_at(conc)),
        "validity_policy": dg.MetadataValue.text(point.policy_version),
        "min_duration_s": dg.MetadataValue.float(point.min_duration_s),
        "launcher": dg.MetadataValue.text(point.launcher),
    }


def outcomes_by_cell(
    cells: Sequence[Cell], jobs: Sequence[BenchmarkJob], outcomes: Sequence[JobOutcome]
) -> dict[Cell, list[tuple[JobOutcome, BenchmarkJob]]]:
    """Each cell's (outcome, job) pairs: jobs at the cell's concurrency and image."""
    by_point = {(o.fingerprint, o.conc): o for o in outcomes}
    found: dict[Cell, list[tuple[JobOutcome, BenchmarkJob]]] = {cell: [] for cell in cells}
    for job in jobs:
        cell = Cell(sku=job.sku, conc=job.conc, image=job.engine.image)
        outcome = by_point.get((job.fingerprint, job.conc))
        if cell in found and outcome is not None:
            found[cell].append((outcome, job))
    return found
