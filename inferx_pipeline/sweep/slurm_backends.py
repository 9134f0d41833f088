"""Slurm backends from the Slurm pools: each SKU's groups run as batch jobs on its pool.

::

    source = slurm_pools(settings, run_id=run_id, pools_file=path, sim=None, environ=os.environ)
    source.require({job.sku for job in jobs})     # unknown SKU: LaunchError naming the file
    run_sweep(jobs, backend=source, ...)

One launcher per pool for the whole sweep; before its first job it cancels this user's
jobs whose launcher died (``SlurmLauncher.cleanup_orphans``). The image
preflight does not run: images live on the cluster's nodes, not on the submit host, so
no digest is known and real points are measured again rather than reused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.launch.slurm_pools import SlurmPool, SlurmPools, load_slurm_pools
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import PoolSource, SweepBackend, job_specs, sku_vendor
from inferx_pipeline.sweep.reuse import FixedDigests, simulated_digest

# Builds the backend of one pool from its name and data.
PoolBackendFactory = Callable[[str, SlurmPool], SweepBackend]


class SlurmBackends(PoolSource[SlurmPool]):
    """A ``BackendSource`` over Slurm pools; ``origin`` names the pools file in errors."""

    def __init__(self, pools: SlurmPools, *, origin: str, build: PoolBackendFactory) -> None:
        super().__init__(pools, origin=origin)
        self.build = build
        self.backends: dict[str, SweepBackend] = {}

    def for_sku(self, sku: str) -> SweepBackend:
        """The backend of ``sku``'s pool (one per pool for the whole sweep)."""
        name, pool = self.pool(sku)
        if name not in self.backends:
            self.backends[name] = self.build(name, pool)
        return self.backends[name]


def slurm_pools(
    settings: Settings,
    *,
    run_id: str,
    pools_file: Path,
    sim: SimOptions | None,
    environ: Mapping[str, str],
) -> SlurmBackends:
    """The Slurm source of ``inferx sweep --launcher slurm``: real engines, or the simulator.

    ``environ`` carries ``SLURM_CONF`` (when not the default) and the secrets. Raises
    ``CatalogError`` for a missing or malformed pools file.
    """
    catalog = cached_catalog(settings.catalog_dir)
    log_dir = settings.state / "logs" / run_id
    digests = FixedDigests(simulated_digest() if sim is not None else None)

    def build(name: str, pool: SlurmPool) -> SweepBackend:
        launcher = SlurmLauncher(pool, log_dir=log_dir / name, run_id=run_id, environ=environ)
        return SweepBackend(
            launcher=launcher,
            specs=job_specs(catalog, sim, pool.model_store),
            vendor_of=sku_vendor(catalog),
            digests=digests,
            simulated=sim is not None,
            prepare=launcher.cleanup_orphans,
        )

    return SlurmBackends(load_slurm_pools(pools_file), origin=str(pools_file), build=build)
