"""Which launcher a sweep runs on: the simulator as a child process, Docker hosts, or this host.

``LauncherChoice`` is what ``inferx sweep --launcher ...`` and the Dagster launcher
resource both parse their settings into; ``source`` builds the runner's
``BackendSource`` from it. With ``kind="docker"`` the hosts come from the runner pools
(``pools_file``, default ``ROOT/deploy/runner-pools.yaml`` when present, else one pool
on ``DOCKER_HOST``), and ``sim_image`` runs the simulator image instead of engines.
With ``kind="local"`` each job's real engine argv runs on this host, with the programs and
model store of the host file (``host_file``, default ``STATE/local-host.yaml``).
With ``kind="slurm"`` each server group is a batch job on the Slurm pool of its SKU
(``pools_file``, a ``kind: slurm`` pools file, required); ``sim_image`` runs the simulator
instead of the engines (runtime ``none``: the simulator of this install).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.local import load_local_host, nvidia_gpus
from inferx_pipeline.launch.ownership import ProcessLedger
from inferx_pipeline.settings import Settings
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.backends import BackendSource, local_backend, simulator_backend
from inferx_pipeline.sweep.pooled import docker_pools


class LauncherChoice(FrozenModel):
    """Where a sweep's servers run."""

    kind: Literal["sim", "docker", "local", "slurm"] = Field(
        default="sim",
        description="sim = simulator child processes; docker = Docker hosts; "
        "local = the real engines on this host; slurm = batch jobs on Slurm pools.",
    )
    sim: SimOptions = Field(
        default_factory=SimOptions, description="Simulator behaviour (sim, or docker+sim_image)."
    )
    sim_image: str | None = Field(
        default=None,
        description="Docker, Slurm: run this simulator image instead of the engines.",
    )
    pools_file: Path | None = Field(
        default=None,
        description="Docker: runner-pools YAML, None = the default location; Slurm: required.",
    )
    host_file: Path | None = Field(
        default=None, description="Local: programs and model store; None = STATE/local-host.yaml."
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
        catalog = cached_catalog(settings.catalog_dir)
        logs = settings.state / "logs" / run_id
        # Servers started on this host are owned by the run (stopped if it dies: ownership.py).
        ledger = ProcessLedger(settings.state / "owned")
        if self.kind == "sim":
            return simulator_backend(catalog, logs, self.sim, ledger=ledger, run_id=run_id)
        if self.kind == "local":
            path = self.host_file or settings.local_host_file
            host = load_local_host(path)
            skus = tuple(skus)
            host.require(skus, origin=path)
            gpus = nvidia_gpus(host, (catalog.sku(sku) for sku in skus))
            return local_backend(
                catalog, host, logs, environ=environ, ledger=ledger, run_id=run_id, gpus=gpus
            )
        in_docker = (
            self.sim.model_copy(update={"image": self.sim_image}) if self.sim_image else None
        )
        if self.kind == "slurm":
            if self.pools_file is None:
                raise LaunchError(
                    "launcher slurm needs a kind: slurm pools file: pass --pools, or set "
                    "INFERX_RUNNER_POOLS for the Dagster launcher resource"
                )
            # Imported here: its HTTP proxy's aiohttp costs every Dagster run worker ~0.4 s.
            from inferx_pipeline.sweep.slurm_backends import slurm_pools

            slurm = slurm_pools(
                settings, run_id=run_id, pools_file=self.pools_file, sim=in_docker, environ=environ
            )
            slurm.require(skus)
            return slurm
        source = docker_pools(
            settings, run_id=run_id, pools_file=self.pools_file, sim=in_docker, environ=environ
        )
        source.require(skus)
        return source
