"""Launcher and point-size flags shared by ``inferx sweep``, ``materialize``, ``backfill``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from pydantic import ValidationError

from inferx_pipeline.cli.sim_flags import TIME_SCALE_OPTION
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.sweep.launchers import LauncherChoice
from inferx_pipeline.sweep.report import SweepOptions

F = TypeVar("F", bound=Callable[..., object])

# SimOptions fields and the flags that set them.
_SIM_FLAGS = {
    "time_scale": "--time-scale",
    "load_time_s": "--load-time-s",
    "answer_key": "--sim-answer-key",
    "answer_share": "--sim-answer-share",
}
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
        TIME_SCALE_OPTION,
        click.option("--load-time-s", type=float, default=None, help="Simulated model load, s."),
        click.option(
            "--sim-answer-key",
            "answer_key",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="Simulator: answer evals from this key (`inferx sim serve --answer-key`), "
            "e.g. inferx_pipeline/evals/data/gsm8k-inferx-test.jsonl [default: filler, "
            "scoring 0].",
        ),
        click.option(
            "--sim-answer-share",
            "answer_share",
            type=click.FloatRange(0, 1),
            default=1.0,
            show_default=True,
            help="Simulator: share of the answer key answered right.",
        ),
    ]
    for decorate in reversed(decorators):
        command = decorate(command)
    return command


def pop_launcher(flags: dict[str, object]) -> LauncherChoice:
    """The ``LauncherChoice`` of the shared flags, removed from ``flags``."""
    try:
        sim = SimOptions.model_validate({key: flags.pop(key) for key in _SIM_FLAGS})
    except ValidationError as err:
        first = err.errors()[0]
        where = "/".join(_SIM_FLAGS[str(part)] for part in first["loc"]) or "simulator flags"
        raise click.UsageError(f"{where}: {first['msg']}") from err
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
