"""The unofficial-run pages: the index of runs, and per run its performance and accuracy.

::

    unofficial/index.html                 every run: PR, head, run id, date
    unofficial/<run dir>/index.html       the run beside its baseline: charts, tier and
                                          per-concurrency tables (``compare``)
    unofficial/<run dir>/accuracy.html    the eval scores the run stored

``<run dir>`` is ``unofficial.run_dir(run id)``: the run id itself for Dagster and uuid
run ids. The tables' cells are formatted as the PR report formats them
(``pr_report.cell``), so the page and the comment read the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inferx_pipeline.leaderboard.compare import METRICS, PointComparison, TierComparison
from inferx_pipeline.leaderboard.pr_report import (
    PCT_DECIMALS,
    TIER_DECIMALS,
    cell,
    fixed,
    image_text,
    metric_header,
    state_text,
    tier_status,
)
from inferx_pipeline.leaderboard.site.charts import comparison_chart
from inferx_pipeline.leaderboard.site.pages import PageWriter
from inferx_pipeline.leaderboard.unofficial import RunEntry, RunView

INDEX = "unofficial/index.html"


def run_page(entry: RunEntry) -> str:
    """Path of a run's performance page relative to the site root."""
    return f"unofficial/{entry.folder}/index.html"


def run_accuracy_page(entry: RunEntry) -> str:
    """Path of a run's accuracy page relative to the site root."""
    return f"unofficial/{entry.folder}/accuracy.html"


def write_runs_index(writer: PageWriter, views: Sequence[RunView]) -> str:
    """``unofficial/index.html``: every run, newest first."""
    runs = [view.entry for view in views]
    return writer.write(INDEX, "unofficial_index.html", title="Unofficial runs", runs=runs)


def write_run_page(writer: PageWriter, view: RunView) -> str:
    """A run's performance page: per recipe x workload a chart of its points beside the
    baseline's, then the tier and per-concurrency tables."""
    entry, comparison = view.entry, view.comparison
    pr_name = f"PR #{entry.pr_number} @ {entry.head_sha[:7]}"
    charts = [
        {"id": f"chart-{n}", **comparison_chart(
            [(f"baseline {group.baseline_recipe_id}", group.baseline), (pr_name, group.pr)],
            comparison.stat, f"{group.recipe_id} · {group.workload}",
        )}
        for n, group in enumerate(view.charts)
    ]  # fmt: skip
    data: dict[str, Any] = {"run_id": entry.run_id, "charts": charts}
    return writer.write(
        run_page(entry), "unofficial_run.html", title=f"Unofficial run · PR #{entry.pr_number}",
        run=entry, comparison=comparison, data=data,
        headers=[metric_header(m, comparison.stat) for m in METRICS],
        points=[_point_row(point) for point in comparison.points],
        tiers=[_tier_row(row) for row in comparison.tiers],
    )  # fmt: skip


def write_run_accuracy(writer: PageWriter, view: RunView) -> str:
    """A run's accuracy page: its eval scores, or a sentence that it scored none."""
    entry = view.entry
    return writer.write(
        run_accuracy_page(entry), "unofficial_accuracy.html",
        title=f"Unofficial run accuracy · PR #{entry.pr_number}", run=entry,
        groups=view.accuracy,
    )  # fmt: skip


def _point_row(point: PointComparison) -> dict[str, Any]:
    return {
        "recipe_id": point.recipe_id, "workload": point.workload, "config": point.config,
        "conc": point.conc, "result_id": point.pr.result_id, "state": point.state,
        "state_text": state_text(point), "image": image_text(point),
        "cells": [(m, cell(m, point)) for m in METRICS],
    }  # fmt: skip


def _tier_row(row: TierComparison) -> dict[str, Any]:
    return {
        "recipe_id": row.recipe_id, "workload": row.workload, "tier": row.tier,
        "tier_text": f"{row.tier:g}" + (" (headline)" if row.headline else ""),
        "headline": row.headline,
        "baseline": fixed(row.baseline.tput_per_gpu, 1.0, TIER_DECIMALS),
        "pr": fixed(row.pr.tput_per_gpu, 1.0, TIER_DECIMALS),
        "delta": fixed(row.change.delta, 1.0, TIER_DECIMALS, sign=True),
        "pct": fixed(row.change.pct, 1.0, PCT_DECIMALS, sign=True),
        "status": tier_status(row),
    }  # fmt: skip
