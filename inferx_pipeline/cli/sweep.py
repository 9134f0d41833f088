"""``inferx sweep [PATHS...] [selection] --launcher sim|docker``: measure the selected jobs.

Exit status: 0 when every job is ok or reused, 1 when any failed, 130 when cancelled.
With ``--launcher docker`` the Docker hosts come from the runner pools (``--pools``,
default ``deploy/runner-pools.yaml`` when present, else one pool on ``DOCKER_HOST``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli.selection import pop_selection, selection_options
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.matrix.build import MatrixRequest, build_matrix
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import BackendSource, simulator_backend
from inferx_pipeline.sweep.console import RichProgress, counts_line, summary_table
from inferx_pipeline.sweep.pooled import docker_pools
from inferx_pipeline.sweep.report import SweepOptions
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy

OPTION_KEYS = tuple(SweepOptions.model_fields)
SIM_KEYS = ("time_scale", "load_time_s")


def _backend(
    launcher: str,
    settings: Settings,
    run_id: str,
    jobs: Sequence[BenchmarkJob],
    sim: SimOptions,
    sim_image: str | None,
    pools: Path | None,
) -> BackendSource:
    if launcher == "sim":
        catalog = cached_catalog(settings.catalog_dir)
        return simulator_backend(catalog, settings.state / "logs" / run_id, sim)
    sim_in_docker = sim.model_copy(update={"image": sim_image}) if sim_image else None
    source = docker_pools(
        settings, run_id=run_id, pools_file=pools, sim=sim_in_docker, environ=os.environ
    )
    source.require(job.sku for job in jobs)  # before anything starts
    return source


@click.command()
@selection_options
@click.option("--evals/--no-evals", default=False, show_default=True, help="Add eval jobs.")
@click.option("--launcher", type=click.Choice(["sim", "docker"]), default="sim", show_default=True)
@click.option("--sim-image", default=None, help="Docker: run this simulator image, not engines.")
@click.option(
    "--pools",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Docker: runner-pools file [default: deploy/runner-pools.yaml if present, "
    "else one pool on DOCKER_HOST].",
)
@click.option("--force", is_flag=True, help="Measure even points that have a good result.")
@click.option("--fail-fast", is_flag=True, help="Cancel the rest after the first failure.")
@click.option("--prompts-per-conc", type=int, default=10, show_default=True)
@click.option("--num-prompts", type=int, default=None, help="Fixed requests per point (smoke).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--warmup-prompts", type=int, default=0, show_default=True)
@click.option("--point-deadline-s", type=float, default=None, help="Cut one point after this.")
@click.option("--think-time-scale", type=float, default=1.0, show_default=True)
@click.option("--max-turns", type=int, default=None, help="Agentic: cut sessions at this turn.")
@click.option("--time-scale", type=float, default=1.0, show_default=True, help="Simulator.")
@click.option("--load-time-s", type=float, default=None, help="Simulated model load, s.")
@click.option("--artifacts-dir", type=click.Path(path_type=Path), default=None)
def sweep(
    paths: tuple[Path, ...],
    evals: bool,
    launcher: str,
    sim_image: str | None,
    pools: Path | None,
    artifacts_dir: Path | None,
    **flags: object,
) -> None:
    """Run the selected jobs (default: all of recipes/) and print a summary table."""
    settings = Settings()
    selection = pop_selection(flags)
    jobs = build_matrix(MatrixRequest(paths=paths, selection=selection, evals=evals), settings)
    sim = SimOptions.model_validate({k: flags.pop(k) for k in SIM_KEYS})
    options = SweepOptions.model_validate({k: flags.pop(k) for k in OPTION_KEYS if k in flags})
    run_id = uuid.uuid4().hex
    backend = _backend(launcher, settings, run_id, jobs, sim, sim_image, pools)
    console = Console()
    with RichProgress(console) as progress:
        report = run_sweep(
            jobs,
            backend=backend,
            artifacts=ArtifactStore(artifacts_dir or settings.artifacts_dir),
            policy=load_policy(settings.catalog_dir),
            options=options,
            progress=progress,
            run_id=run_id,
        )
    console.print(summary_table(report))
    console.print(counts_line(report))
    if not report.ok:
        click.get_current_context().exit(130 if "cancelled" in report.counts() else 1)
