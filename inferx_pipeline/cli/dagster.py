"""``inferx dagster ui`` (the Dagster UI on the embedded default) and ``inferx dagster pools``."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import FrameType
from typing import NoReturn

import click

from inferx_pipeline.cli.runs import dagster_home_option
from inferx_pipeline.defs.definitions import sku_ladders
from inferx_pipeline.defs.devserver import DagsterDev
from inferx_pipeline.defs.execute import prepare_instance, workspace_file
from inferx_pipeline.settings import Settings

UI_READY_DEADLINE_S = 120.0


@click.group()
def dagster() -> None:
    """The Dagster side: open the UI, set per-SKU pool limits."""


def _interrupted(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


@dagster.command()
@dagster_home_option
@click.option("--port", type=int, default=3000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Listen address.")
def ui(dagster_home: Path | None, port: int, host: str) -> None:
    """Open the Dagster UI (``dagster dev``) on the embedded default until Ctrl-C."""
    # Started from a script, this process may inherit SIGINT ignored: make Ctrl-C and a
    # plain `kill PID` both stop dagster dev through the `with` block below.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupted)
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
    with server:
        server.wait_ready(UI_READY_DEADLINE_S)
        click.echo(f"Dagster UI: {server.url}  (log: {server.log}; Ctrl-C stops it)")
        try:
            assert server.process is not None
            server.process.wait()
        except KeyboardInterrupt:
            click.echo("stopping dagster dev")


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
