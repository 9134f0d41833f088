"""The simulator's clock flag, shared by ``inferx sim serve`` and the commands that launch it.

Its own module because the simulator image imports ``inferx sim serve`` without the
launchers' dependencies (docker, Dagster); ``cli/launch_flags.py`` imports those.
"""

from __future__ import annotations

import click

from inferx_pipeline.sim.config import SIM_TIME_SCALE_ENV

TIME_SCALE_OPTION = click.option(
    "--time-scale",
    type=float,
    default=1.0,
    show_default=True,
    envvar=SIM_TIME_SCALE_ENV,
    show_envvar=True,
    help="Simulator: multiplies its simulated durations (0.05: 20 times faster).",
)
