"""Docker backends from the runner pools: each SKU's groups run on its pool's hosts.

::

    source = PooledBackends(load_pools(path, os.environ), origin=str(path), build=make_backend)
    source.require({job.sku for job in jobs})     # unknown SKU: LaunchError naming the file
    run_sweep(jobs, backend=source, ...)

For each server group the source takes the group's SKU pool and the host whose turn it
is (``HostRotation``, round-robin); a host whose daemon does not answer is skipped for
the next one, and a pool with no reachable host fails that group (``launch-failed``).
One client and one backend are kept per host for the whole sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import docker

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.pools import (
    DockerHost,
    HostRotation,
    RunnerPool,
    RunnerPools,
    docker_client,
    load_pools,
)
from inferx_pipeline.launch.preflight import FactCache
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.backends import PoolSource, SweepBackend, docker_backend

DEFAULT_POOLS_FILE = Path("deploy") / "runner-pools.yaml"
EMBEDDED_ORIGIN = "the embedded runner pools (one pool 'local' on DOCKER_HOST)"

# Builds the backend of one host from its client and its pool's container options.
BackendFactory = Callable[[docker.DockerClient, DockerOptions], SweepBackend]


class PooledBackends(PoolSource[RunnerPool]):
    """A ``BackendSource`` over runner pools; ``origin`` names the pools file in errors."""

    def __init__(
        self,
        pools: RunnerPools,
        *,
        origin: str,
        build: BackendFactory,
        connect: Callable[[DockerHost], docker.DockerClient] = docker_client,
    ) -> None:
        super().__init__(pools, origin=origin)
        self.build = build
        self.connect = connect
        self.rotation = HostRotation()
        self.backends: dict[DockerHost, SweepBackend] = {}

    def for_sku(self, sku: str) -> SweepBackend:
        """The backend of the next reachable host in ``sku``'s pool (see the module doc)."""
        name, pool = self.pool(sku)
        unreachable = []
        for host in self.rotation.order(name, pool):
            try:
                backend = self._backend(host, pool.docker)
            except LaunchError as err:
                unreachable.append(str(err))
                continue
            self.rotation.take(name, pool, host)
            return backend
        raise LaunchError(
            f"{self.origin}: runner pool {name!r} has no reachable Docker host: "
            + "; ".join(unreachable)
        )

    def _backend(self, host: DockerHost, options: DockerOptions) -> SweepBackend:
        if host not in self.backends:
            self.backends[host] = self.build(self.connect(host), options)
        return self.backends[host]


def docker_pools(
    settings: Settings,
    *,
    run_id: str,
    pools_file: Path | None,
    sim: SimOptions | None,
    environ: Mapping[str, str],
) -> PooledBackends:
    """The Docker source of ``inferx sweep --launcher docker``.

    ``pools_file`` defaults to ``ROOT/deploy/runner-pools.yaml`` when that exists, else the
    embedded default pool on ``DOCKER_HOST``. Facts are cached under the state dir;
    secrets come from ``environ``. Raises ``CatalogError`` for a malformed pools file.
    """
    path = pools_file or settings.root / DEFAULT_POOLS_FILE
    origin = str(path) if path.is_file() else EMBEDDED_ORIGIN
    catalog = cached_catalog(settings.catalog_dir)
    facts = FactCache.under(settings.state)
    policy = cached_policy(settings.catalog_dir)
    log_dir = settings.state / "logs" / run_id

    def build(client: docker.DockerClient, options: DockerOptions) -> SweepBackend:
        return docker_backend(
            client, catalog, run_id=run_id, log_dir=log_dir, facts=facts, policy=policy,
            docker_options=options, sim=sim, environ=environ,
        )  # fmt: skip

    return PooledBackends(load_pools(path, environ), origin=origin, build=build)
