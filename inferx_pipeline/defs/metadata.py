"""What each materialization shows a person: library results turned into Dagster metadata.

Pure functions from the library's result types to ``dg.MetadataValue``s; the assets
attach them. Tables are Markdown so the UI renders them; paths are ``path`` values so
the UI links them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import dagster as dg

from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadResult

if TYPE_CHECKING:  # pandas, plotly, SQLAlchemy: not loaded by a sweep run's worker
    from inferx_pipeline.leaderboard.build import SiteManifest
    from inferx_pipeline.results.store import IngestReport
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from inferx_pipeline.sweep.report import JobOutcome, SweepReport

# Rows shown in one Markdown table; the rest are counted (the UI is not a data browser).
MAX_ROWS = 200


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table of ``rows`` (cells' ``|`` escaped), cut at MAX_ROWS with a count."""
    lines = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
    extra = 0
    for index, row in enumerate(rows):
        if index >= MAX_ROWS:
            extra += 1
            continue
        cells = (str(cell).replace("|", "\\|").replace("\n", " ") for cell in row)
        lines.append(f"| {' | '.join(cells)} |")
    if extra:
        lines.append(f"\n… and {extra} more rows")
    return "\n".join(lines)


def _findings_table(findings: Sequence[Finding]) -> dg.MetadataValue:
    rows = ((f.rule, str(f.location or ""), f.field, f.message) for f in findings)
    return dg.MetadataValue.md(markdown_table(("rule", "where", "field", "message"), rows))


def recipe_metadata(loaded: LoadResult) -> dict[str, dg.MetadataValue]:
    """Recipe count, errors and warnings (each with file:line and rule), recipes per family."""
    families = Counter(item.recipe.model.family for item in loaded.recipes)
    return {
        "recipes": dg.MetadataValue.int(len(loaded.recipes)),
        "invalid_files": dg.MetadataValue.int(
            len({f.location.file for f in loaded.errors if f.location})
        ),
        "errors": dg.MetadataValue.int(len(loaded.errors)),
        "warnings": dg.MetadataValue.int(len(loaded.warnings)),
        "error_list": _findings_table(loaded.errors),
        "warning_list": _findings_table(loaded.warnings),
        "per_family": dg.MetadataValue.json(dict(sorted(families.items()))),
    }


def policy_metadata(loaded: LoadResult) -> dict[str, dg.MetadataValue]:
    """Errors per policy rule (the blocking check's evidence)."""
    per_rule = Counter(f.rule for f in loaded.errors)
    return {
        "errors_per_rule": dg.MetadataValue.json(dict(sorted(per_rule.items()))),
        "errors": _findings_table(loaded.errors),
    }


def curve_metadata(golden: GoldenRegistry) -> dict[str, dg.MetadataValue]:
    """One row per golden curve: provenance and content hash."""
    rows = []
    for name in golden.names():
        curve = golden.curve(name)
        rows.append(
            (
                name,
                curve.curve_model,
                curve.precision,
                curve.hardware,
                curve.engine,
                ", ".join(curve.modes()),
                curve.source_run,
                golden.file_hash(name)[:12],
            )
        )
    header = ("curve", "model", "precision", "hardware", "engine", "thinking", "source", "sha256")
    return {
        "curves": dg.MetadataValue.int(len(rows)),
        "provenance": dg.MetadataValue.md(markdown_table(header, rows)),
    }


def matrix_metadata(
    jobs: Sequence[BenchmarkJob], images: Sequence[str]
) -> dict[str, dg.MetadataValue]:
    """Jobs per SKU x concurrency (a table), the total, and the pinned images."""
    per_cell = Counter((job.sku, job.conc) for job in jobs)
    skus = sorted({sku for sku, _ in per_cell})
    concs = sorted({conc for _, conc in per_cell})
    rows = [(sku, *(per_cell.get((sku, c), "") for c in concs)) for sku in skus]
    return {
        "jobs": dg.MetadataValue.int(len(jobs)),
        "recipes": dg.MetadataValue.int(len({job.recipe_id for job in jobs})),
        "jobs_per_sku_x_conc": dg.MetadataValue.md(
            markdown_table(("sku \\ conc", *(str(c) for c in concs)), rows)
        ),
        "pinned_images": dg.MetadataValue.json(sorted(images)),
    }


def _headline(outcome: JobOutcome, gpus: int) -> tuple[str, str, str]:
    result = outcome.result
    if result is None:
        return "", "", ""
    per_gpu = f"{result.total_token_throughput / gpus:.1f}"
    intvty = f"{result.median_intvty:.1f}" if result.median_intvty else ""
    ttft = f"{result.median_ttft_ms:.1f}" if result.median_ttft_ms is not None else ""
    return per_gpu, intvty, ttft


def sweep_metadata(
    report: SweepReport,
    jobs: Sequence[BenchmarkJob],
    cells: Sequence[Cell],
    artifacts: ArtifactStore,
) -> dict[str, dg.MetadataValue]:
    """Per-job status and headline numbers, counts, launches and artifact links of one run."""
    by_point = {(job.fingerprint, job.conc): job for job in jobs}
    rows = []
    for outcome in report.outcomes:
        job = by_point[(outcome.fingerprint, outcome.conc)]
        sha = outcome.manifest.artifacts.get(RESULT) if outcome.manifest else None
        link = str(artifacts.path(sha)) if sha else ""
        rows.append(
            (
                outcome.job_id,
                job.engine.image.rsplit(":", 1)[-1][:24],
                outcome.status,
                *_headline(outcome, job.gpus),
                outcome.message[:160],
                link,
            )
        )
    header = ("job", "tag", "status", "tok/s/GPU", "tok/s/user", "TTFT p50 ms", "why", "result")
    empty = sorted({(c.conc, c.image) for c in cells} - {(j.conc, j.engine.image) for j in jobs})
    return {
        "jobs": dg.MetadataValue.int(len(report.outcomes)),
        "status_counts": dg.MetadataValue.json(report.counts()),
        **run_metadata(report),
        "per_job": dg.MetadataValue.md(markdown_table(header, rows)),
        "cells_without_jobs": dg.MetadataValue.json([f"{conc}|{image}" for conc, image in empty]),
        "artifacts_dir": dg.MetadataValue.path(str(artifacts.root)),
    }


def run_metadata(report: SweepReport) -> dict[str, dg.MetadataValue]:
    """What one sweep run cost: server launches and groups, wall time, its run id, and
    what went wrong outside any job (``notes``, only when there is any)."""
    notes = {"notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in report.notes))}
    return {
        "server_launches": dg.MetadataValue.int(report.server_launches),
        "server_groups": dg.MetadataValue.int(report.groups),
        "wall_s": dg.MetadataValue.float(round(report.finished_at - report.started_at, 3)),
        "sweep_run_id": dg.MetadataValue.text(report.run_id),
        **(notes if report.notes else {}),
    }


def ingest_metadata(
    report: IngestReport, evals: IngestReport, total_rows: int
) -> dict[str, dg.MetadataValue]:
    """Rows written, already stored, quarantined (with reasons), of the results ``report``
    and of the eval scores' (keys prefixed ``eval_``); and the results table's size."""
    return {
        **_ingested(report, ""),
        **_ingested(evals, "eval_"),
        "rows_in_store": dg.MetadataValue.int(total_rows),
    }


def _ingested(report: IngestReport, prefix: str) -> dict[str, dg.MetadataValue]:
    rows = ((r.path, r.code, r.reason) for r in report.rejections)
    return {
        f"{prefix}written": dg.MetadataValue.int(report.written),
        f"{prefix}already_stored": dg.MetadataValue.int(report.skipped_existing),
        f"{prefix}quarantined": dg.MetadataValue.int(report.quarantined),
        f"{prefix}quarantine": dg.MetadataValue.md(
            markdown_table(("file", "code", "reason"), rows)
        ),
    }


def site_metadata(site: SiteManifest) -> dict[str, dg.MetadataValue]:
    """The site's path (a path, not a ``file://`` link, which browsers block), pages, counts."""
    index = f"{site.out_dir}/index.html"
    pages = ((p.kind, p.title, p.path) for p in site.pages)
    return {
        "site": dg.MetadataValue.path(index),
        **{name: dg.MetadataValue.int(value) for name, value in sorted(site.counts.items())},
        "page_list": dg.MetadataValue.md(markdown_table(("kind", "title", "path"), pages)),
    }
