"""``inferx dagster ui`` (the Dagster UI on the embedded default) and ``inferx dagster pools``."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import FrameType

import click

from inferx_pipeline.cli.runs import dagster_home_option
from inferx_pipeline.defs.definitions import sku_ladders
from inferx_pipeline.defs.devserver import READY_POLL_S, DagsterDev
from inferx_pipeline.defs.execute import prepare_instance, workspace_file
from inferx_pipeline.settings import Settings

UI_READY_DEADLINE_S = 120.0


@click.group()
def dagster() -> None:
    """The Dagster side: open the UI, set per-SKU pool limits."""


class StopRequest:
    """A signal handler that records Ctrl-C or SIGTERM for the loops to read.

    A flag rather than KeyboardInterrupt: a signal landing inside an interpreter callback
    (the logging module's at-fork hook while dagster dev is spawned) loses the exception,
    and the UI would keep running.
    """

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True


@dagster.command()
@dagster_home_option
@click.option("--port", type=int, default=3000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Listen address.")
def ui(dagster_home: Path | None, port: int, host: str) -> None:
    """Open the Dagster UI (``dagster dev``) on the embedded default until Ctrl-C."""
    # Started from a script, this process may inherit SIGINT ignored: Ctrl-C and a plain
    # `kill PID` both stop it, at any point (still starting included), and a second one
    # does not cut the cleanup short.
    stop = StopRequest()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    settings = Settings()
    instance_home = dagster_home or settings.dagster_home
    prepare_instance(instance_home, sku_ladders(settings), settings.runner_pools, os.environ)
    server = DagsterDev(
        workspace_file(instance_home),
        instance_home,
        host=host,
        port=port,
        log=settings.state / "logs" / "dagster-dev.log",
    )
    try:
        server.start()
        if server.wait_ready(UI_READY_DEADLINE_S, stopped=lambda: stop.requested):
            click.echo(f"Dagster UI: {server.url}  (log: {server.log}; Ctrl-C stops it)")
        assert server.process is not None
        while not stop.requested:
            if (code := server.process.poll()) is not None:
                raise click.ClickException(f"dagster dev exited with {code}; its log: {server.log}")
            time.sleep(READY_POLL_S)  # a signal sets the flag; this loop reads it
        click.echo("stopping dagster dev")
    finally:
        server.stop()


@dagster.command()
@dagster_home_option
@click.option(
    "--pools",
    "pools_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="INFERX_RUNNER_POOLS",
    default=None,
    help="Runner-pools YAML [default: INFERX_RUNNER_POOLS, else one local pool].",
)
def pools(dagster_home: Path | None, pools_file: Path | None) -> None:
    """Set each SKU's pool (gpu-<sku>) to the nodes of the runner pool serving it."""
    settings = Settings()
    limits = prepare_instance(
        dagster_home or settings.dagster_home, sku_ladders(settings), pools_file, os.environ
    )
    for pool, limit in sorted(limits.items()):
        click.echo(f"{pool}: {limit}")
