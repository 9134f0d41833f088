"""``inferx materialize [selection]``: measure the selected jobs' sweep partitions through Dagster.

Each selected job's cell at its recipe's pinned image, one Dagster run per SKU x image
x range of concurrencies (so each server starts once for all its concurrencies),
recorded on the local instance (the UI of ``inferx ui`` shows them) and published.
Exit status 1 when a run failed.
"""

from __future__ import annotations

import click

from inferx_pipeline.cli.launch_flags import launch_options
from inferx_pipeline.cli.runs import dagster_options, run_cells
from inferx_pipeline.cli.selection import pop_selection, selection_flags
from inferx_pipeline.matrix.build import MatrixRequest, build_matrix
from inferx_pipeline.matrix.partitions import pinned_cells
from inferx_pipeline.settings import Settings


@click.command()
@selection_flags
@launch_options
@dagster_options
def materialize(**flags: object) -> None:
    """Materialize the selected jobs (default: every recipe) at their pinned images."""
    settings = Settings()
    jobs = build_matrix(MatrixRequest(paths=(), selection=pop_selection(flags)), settings)
    if not jobs:
        raise click.UsageError("the selection matches no job; see `inferx matrix` for the jobs")
    run_cells(settings, sorted(pinned_cells(jobs), key=str), flags, reason="command-line")
