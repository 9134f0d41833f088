"""Launcher and point-size flags shared by ``inferx sweep``, ``materialize``, ``backfill``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.sweep.launchers import LauncherChoice
from inferx_pipeline.sweep.report import SweepOptions

F = TypeVar("F", bound=Callable[..., object])

_SIM_KEYS = ("time_scale", "load_time_s")
_LAUNCHER_KEYS = ("launcher", "sim_image", "pools", "host_file")


def launch_options(command: F) -> F:
    """Add ``--launcher``, the Docker and simulator settings, and how each point is sized."""
    decorators = [
        click.option(
            "--launcher",
            type=click.Choice(["sim", "docker", "local", "slurm"]),
            default="sim",
            show_default=True,
        ),
        click.option(
            "--sim-image",
            default=None,
            help="Docker, Slurm: run this simulator image, not engines.",
        ),
        click.option(
            "--pools",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="Docker: runner-pools file [default: deploy/runner-pools.yaml if present, "
            "else one pool on DOCKER_HOST]; Slurm: a kind: slurm pools file (required).",
        ),
        click.option(
            "--host-file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="Local: engine programs and model store of this host "
            "[default: STATE/local-host.yaml; scripts/cpu-host writes one].",
        ),
        click.option("--force", is_flag=True, help="Measure even points that have a good result."),
        click.option("--prompts-per-conc", type=int, default=10, show_default=True),
        click.option(
            "--num-prompts", type=int, default=None, help="Fixed requests per point (smoke)."
        ),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--warmup-prompts", type=int, default=0, show_default=True),
        click.option("--think-time-scale", type=float, default=1.0, show_default=True),
        click.option(
            "--max-turns", type=int, default=None, help="Agentic: cut sessions at this turn."
        ),
        click.option("--time-scale", type=float, default=1.0, show_default=True, help="Simulator."),
        click.option("--load-time-s", type=float, default=None, help="Simulated model load, s."),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def pop_launcher(flags: dict[str, object]) -> LauncherChoice:
    """The ``LauncherChoice`` of the shared flags, removed from ``flags``."""
    sim = SimOptions.model_validate({key: flags.pop(key) for key in _SIM_KEYS})
    kind, sim_image, pools, host_file = (flags.pop(key) for key in _LAUNCHER_KEYS)
    return LauncherChoice.model_validate(
        {
            "kind": kind,
            "sim": sim,
            "sim_image": sim_image,
            "pools_file": pools,
            "host_file": host_file,
        }
    )


def pop_sweep_options(flags: dict[str, object]) -> SweepOptions:
    """The ``SweepOptions`` among ``flags`` (removed from it)."""
    return SweepOptions.model_validate(
        {key: flags.pop(key) for key in tuple(SweepOptions.model_fields) if key in flags}
    )
