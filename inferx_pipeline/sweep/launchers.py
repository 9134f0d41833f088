"""Which launcher a sweep runs on: the simulator as a child process, or Docker hosts.

``LauncherChoice`` is what ``inferx sweep --launcher ...`` and the Dagster launcher
resource both parse their settings into; ``source`` builds the runner's
``BackendSource`` from it. With ``kind="docker"`` the hosts come from the runner pools
(``pools_file``, default ``ROOT/deploy/runner-pools.yaml`` when present, else one pool
on ``DOCKER_HOST``), and ``sim_image`` runs the simulator image instead of engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.backends import BackendSource, simulator_backend
from inferx_pipeline.sweep.pooled import docker_pools


class LauncherChoice(FrozenModel):
    """Where a sweep's servers run."""

    kind: Literal["sim", "docker"] = Field(
        default="sim", description="sim = simulator child processes; docker = Docker hosts."
    )
    sim: SimOptions = Field(
        default_factory=SimOptions, description="Simulator behaviour (sim, or docker+sim_image)."
    )
    sim_image: str | None = Field(
        default=None, description="Docker: run this simulator image instead of the engines."
    )
    pools_file: Path | None = Field(
        default=None, description="Docker: runner-pools YAML; None = the default location."
    )

    def source(
        self,
        settings: Settings,
        *,
        run_id: str,
        skus: Iterable[str],
        environ: Mapping[str, str],
    ) -> BackendSource:
        """The backend source for a sweep of ``skus`` (checked before anything starts).

        Raises LaunchError when no runner pool serves one of ``skus`` and CatalogError
        for a malformed pools file.
        """
        if self.kind == "sim":
            catalog = cached_catalog(settings.catalog_dir)
            return simulator_backend(catalog, settings.state / "logs" / run_id, self.sim)
        in_docker = (
            self.sim.model_copy(update={"image": self.sim_image}) if self.sim_image else None
        )
        source = docker_pools(
            settings, run_id=run_id, pools_file=self.pools_file, sim=in_docker, environ=environ
        )
        source.require(skus)
        return source
