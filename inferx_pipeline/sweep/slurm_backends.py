"""Slurm backends from the Slurm pools: each SKU's groups run as batch jobs on its pool.

::

    source = slurm_pools(settings, run_id=run_id, pools_file=path, sim=None, environ=os.environ)
    source.require({job.sku for job in jobs})     # unknown SKU: LaunchError naming the file
    run_sweep(jobs, backend=source, ...)

One launcher per pool for the whole sweep; before its first job it cancels the orphans
of launchers on this host that died (``SlurmLauncher.cleanup_orphans``). The image
preflight does not run: images live on the cluster's nodes, not on the submit host, so
no digest is known and real points are measured again rather than reused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.launch.slurm_pools import SlurmPool, SlurmPools, load_slurm_pools
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import SweepBackend, engine_specs, sim_specs, with_tokenizer
from inferx_pipeline.sweep.reuse import FixedDigests, simulated_digest

# Builds the backend of one pool from its name and data.
PoolBackendFactory = Callable[[str, SlurmPool], SweepBackend]


class SlurmBackends:
    """A ``BackendSource`` over Slurm pools; ``origin`` names the pools file in errors."""

    def __init__(self, pools: SlurmPools, *, origin: str, build: PoolBackendFactory) -> None:
        self.pools = pools
        self.origin = origin
        self.build = build
        self.backends: dict[str, SweepBackend] = {}

    def _pool(self, sku: str) -> tuple[str, SlurmPool]:
        try:
            return self.pools.pool_for(sku)
        except LaunchError as err:
            raise LaunchError(f"{self.origin}: {err}") from err

    def require(self, skus: Iterable[str]) -> None:
        """Raise ``LaunchError`` (naming the pools file) for a SKU no pool serves."""
        for sku in sorted(set(skus)):
            self._pool(sku)

    def for_sku(self, sku: str) -> SweepBackend:
        """The backend of ``sku``'s pool (one per pool for the whole sweep)."""
        name, pool = self._pool(sku)
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
        # A real engine's client measures with the model's own tokenizer from the pool's store.
        specs = (
            sim_specs(catalog, sim)
            if sim is not None
            else with_tokenizer(engine_specs(catalog), pool.model_store)
        )
        return SweepBackend(
            launcher=launcher,
            specs=specs,
            vendor_of=lambda sku: catalog.sku(sku).vendor,
            digests=digests,
            simulated=sim is not None,
            prepare=launcher.cleanup_orphans,
        )

    return SlurmBackends(load_slurm_pools(pools_file), origin=str(pools_file), build=build)
