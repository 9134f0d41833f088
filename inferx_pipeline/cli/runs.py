"""What ``inferx materialize`` and ``inferx backfill`` share: run cells through Dagster, report.

In this process on the instance at ``--dagster-home`` (default ``.inferx/dagster``),
then the publish job; or, with ``--webserver``, queued on a deployment (its daemon
launches them as the per-SKU pools allow). With both, the images are registered as
partitions on the ``--dagster-home`` instance first: point it (or ``DAGSTER_HOME``) at the
deployment's instance directory, e.g. one holding ``deploy/dagster.yaml``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import click
import dagster as dg
from rich.console import Console
from rich.table import Table

from inferx_pipeline.cli.bench import EXIT_INTERRUPTED
from inferx_pipeline.cli.launch_flags import pop_launcher, pop_sweep_options
from inferx_pipeline.defs.config import SweepConfig
from inferx_pipeline.defs.definitions import build_definitions, sku_ladders
from inferx_pipeline.defs.execute import (
    RangeRun,
    graphql_client,
    local_instance,
    publish_in_process,
    run_cells_in_process,
    submit_cells,
)
from inferx_pipeline.defs.liveness import fail_dead_runs
from inferx_pipeline.defs.partitions import add_images
from inferx_pipeline.defs.resources import LauncherResource
from inferx_pipeline.defs.upstream import materialize_upstream
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.console import print_fitted
from inferx_pipeline.sweep.signals import interrupt_event

F = TypeVar("F", bound=Callable[..., object])


# The Dagster instance a command reads or records in (the webserver's, or the embedded one).
dagster_home_option = click.option(
    "--dagster-home",
    envvar="DAGSTER_HOME",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Dagster instance directory [default: DAGSTER_HOME, else .inferx/dagster].",
)


def dagster_options(command: F) -> F:
    """Add ``--webserver``, ``--dagster-home`` and ``--publish/--no-publish``."""
    decorators = [
        click.option(
            "--webserver",
            default=None,
            help="Queue the runs on the Dagster deployment at this URL instead of running here.",
        ),
        dagster_home_option,
        click.option(
            "--publish/--no-publish",
            default=True,
            show_default=True,
            help="Ingest results and rebuild the leaderboard after the runs (here only).",
        ),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def _table(runs: Iterable[RangeRun]) -> Table:
    table = Table(title="Dagster runs")
    for column in ("sku", "image", "concurrency", "run", "status", "jobs"):
        # Short whole values stay whole; a narrow terminal folds the image and counts instead.
        table.add_column(
            column, overflow="fold", no_wrap=column in ("concurrency", "run", "status")
        )
    for run in runs:
        concs = run.cells.concs
        span = str(concs[0]) if len(concs) == 1 else f"{concs[0]}..{concs[-1]}"
        counts = ", ".join(f"{n} {status}" for status, n in sorted(run.counts.items()))
        table.add_row(run.cells.sku, run.cells.image, span, run.run_id[:8], run.status, counts)
    return table


def run_cells(
    settings: Settings,
    cells: list[Cell],
    flags: dict[str, object],
    *,
    reason: str,
    tags: dict[str, str] | None = None,
    evals: EvalMode = "none",
) -> None:
    """Run (or queue) ``cells`` as the shared flags say; print the runs and the site path.

    The point-size flags and ``evals`` become every run's sweep asset config, the launcher
    flags the ``launcher`` resource's config of runs here (a deployment keeps its own
    launcher). Exits 1 when a
    run failed (its outcomes are still recorded and published), 130 when SIGINT or
    SIGTERM stopped the runs here (what they recorded is kept; nothing is published).
    Runs of this instance whose process died are marked failed first (``defs.liveness``),
    then the upstream assets are brought up to date (``defs.upstream``).
    """
    webserver = flags.pop("webserver")
    home = flags.pop("dagster_home")
    publish = bool(flags.pop("publish"))
    launcher = LauncherResource.of(pop_launcher(flags))
    sweep = SweepConfig.choices(pop_sweep_options(flags), evals)
    ladder_of = sku_ladders(settings)
    console = Console()
    if isinstance(webserver, str):
        if isinstance(home, Path):  # the deployment's instance (its dagster.yaml): add images
            instance = local_instance(home)
            try:
                add_images(instance, cells)
            finally:
                instance.dispose()
        client = graphql_client(webserver)
        queued = submit_cells(client, cells, ladder_of, reason=reason, tags=tags, sweep=sweep)
        print_fitted(console, _table(queued), os.environ)
        return
    # Dagster flags pools and single-run backfills as beta on every load; we use them on purpose.
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    # The code location's definitions, the options as run config: same job snapshots.
    defs = build_definitions(settings, ladder_of=ladder_of)
    instance = local_instance(home if isinstance(home, Path) else settings.dagster_home)
    command = click.get_current_context().command_path
    for run_id in fail_dead_runs(instance, by=f"`{command}`"):
        console.print(f"run {run_id}: its process is gone; marked FAILURE")
    with interrupt_event() as stop:
        upstream = materialize_upstream(defs, instance, settings)
        if upstream is not None and upstream.interrupted:
            stop.set()  # the signal went to the upstream run's step: start no sweep
        elif upstream is not None and not upstream.success:
            click.echo(
                f"upstream run {upstream.run_id} failed (see its log); sweeping on", err=True
            )
        runs = run_cells_in_process(
            defs,
            instance,
            cells,
            ladder_of,
            reason=reason,
            tags=tags,
            run_config=launcher.run_config(),
            sweep=sweep,
            stop=stop,
        )
    print_fitted(console, _table(runs), os.environ)
    if stop.is_set() or any(run.interrupted for run in runs):
        click.echo("interrupted: later runs not started, nothing published", err=True)
        click.get_current_context().exit(EXIT_INTERRUPTED)
    failed = [run for run in runs if run.status != "SUCCESS"]
    if publish:
        published = publish_in_process(defs, instance)
        if not published.success:
            raise click.ClickException(f"publish run {published.run_id} failed; see its logs")
        click.echo(str(settings.site_dir / "index.html"))
    if failed:
        click.get_current_context().exit(1)
