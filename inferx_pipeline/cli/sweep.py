"""``inferx sweep [PATHS...] [selection] --launcher sim|docker``: measure the selected jobs.

Exit status: 0 when every job is ok or reused, 1 when any failed, 130 when cancelled
(Ctrl-C or SIGTERM: the servers are stopped and the run is recorded either way).
Eval jobs (``--evals``, ``--evals-only``, ``--all-evals``) are scored by lm-eval from
``INFERX_LM_EVAL_PYTHON`` (default: the venv ``scripts/lm-eval-env`` caches).
With ``--launcher docker`` the Docker hosts come from the runner pools (``--pools``,
default ``deploy/runner-pools.yaml`` when present, else one pool on ``DOCKER_HOST``).
``--format json`` prints one ``SweepSummary`` document on stdout and nothing else (the
progress goes to stderr); the exit status is the same as with the table.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import click
from rich.console import Console

from inferx_pipeline.cli.eval_flags import eval_flags
from inferx_pipeline.cli.launch_flags import launch_options, pop_launcher, pop_sweep_options
from inferx_pipeline.cli.selection import pop_selection, selection_options
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.console import RichProgress, counts_line, print_fitted, summary_table
from inferx_pipeline.sweep.evaluate import eval_setup
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.signals import terminate_as_interrupt
from inferx_pipeline.sweep.status import load_policy
from inferx_pipeline.sweep.summary import fields_help, summarize


@click.command(epilog=fields_help())
@selection_options
@eval_flags
@launch_options
@click.option("--fail-fast", is_flag=True, help="Cancel the rest after the first failure.")
@click.option("--point-deadline-s", type=float, default=None, help="Cut one point after this.")
@click.option("--artifacts-dir", type=click.Path(path_type=Path), default=None)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: a summary table; json: one JSON document (fields below), progress on stderr.",
)
def sweep(
    paths: tuple[Path, ...],
    evals: EvalMode,
    artifacts_dir: Path | None,
    fmt: str,
    **flags: object,
) -> None:
    """Run the selected jobs (default: all of recipes/) and print a summary (table or JSON)."""
    settings = Settings()
    selection = pop_selection(flags)
    jobs = build_matrix(MatrixRequest(paths=paths, selection=selection, evals=evals), settings)
    launcher = pop_launcher(flags)
    options = pop_sweep_options(flags)
    run_id = uuid.uuid4().hex
    backend = launcher.source(
        settings, run_id=run_id, skus={job.sku for job in jobs}, environ=os.environ
    )
    store = ArtifactStore(artifacts_dir or settings.artifacts_dir)
    console = Console(stderr=fmt == "json")  # stdout holds the JSON document alone
    with terminate_as_interrupt(), RichProgress(console) as progress:
        report = run_sweep(
            jobs,
            backend=backend,
            artifacts=store,
            policy=load_policy(settings.catalog_dir),
            options=options,
            progress=progress,
            run_id=run_id,
            evals=eval_setup(settings) if any(job.run_eval for job in jobs) else None,
        )
    if fmt == "json":
        click.echo(summarize(report, store).model_dump_json(indent=2))
    else:
        print_fitted(console, summary_table(report), os.environ)
        console.print(counts_line(report))
    if not report.ok:
        click.get_current_context().exit(130 if "cancelled" in report.counts() else 1)
