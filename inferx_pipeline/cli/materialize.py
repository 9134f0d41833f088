"""``inferx materialize [selection]``: measure the selected jobs' sweep partitions through Dagster.

Each selected job's cell at its recipe's pinned image, one Dagster run per SKU x image
x range of concurrencies (so each server starts once for all its concurrencies),
recorded on the local instance (the UI of ``inferx ui`` shows them) and published. The
eval flags (as ``inferx sweep``'s) set the runs' eval mode: ``--evals-only`` materializes
the cells of the eval jobs and scores them, as ``inferx sweep --evals-only`` does.
Exit status 1 when a run failed; 130 when Ctrl-C or SIGTERM stopped it, as it stops
``inferx sweep``: the run being executed ends FAILURE with its point cut, the rest
cancelled and its servers stopped, later runs are not started, and nothing is
published. A run left STARTED by a process that died (SIGKILL, a crash) is marked
FAILURE when the next ``inferx materialize`` or ``backfill`` starts.
"""

from __future__ import annotations

import click

from inferx_pipeline.cli.eval_flags import eval_flags
from inferx_pipeline.cli.launch_flags import launch_options
from inferx_pipeline.cli.runs import dagster_options, run_cells
from inferx_pipeline.cli.selection import pop_selection, selection_flags
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.matrix.partitions import pinned_cells
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings


@click.command()
@selection_flags
@eval_flags
@launch_options
@dagster_options
def materialize(evals: EvalMode, **flags: object) -> None:
    """Materialize the selected jobs (default: every recipe) at their pinned images."""
    settings = Settings()
    request = MatrixRequest(paths=(), selection=pop_selection(flags), evals=evals)
    jobs = build_matrix(request, settings)
    if not jobs:
        raise click.UsageError("the selection matches no job; see `inferx matrix` for the jobs")
    cells = sorted(pinned_cells(jobs), key=str)
    run_cells(settings, cells, flags, reason="command-line", evals=evals)
