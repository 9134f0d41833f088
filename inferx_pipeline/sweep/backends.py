"""Where a sweep's servers run: a launcher plus how jobs become specs on it.

``simulator_backend`` is the embedded default: every job runs on ``inferx sim serve``
as a child process, standing in for the job's SKU with that SKU's catalog data.
``local_backend`` runs each job's real engine argv on this host (programs and model store
from its host file). ``docker_backend`` runs each job's real engine image (or, with
``sim``, the simulator image) through the Docker launcher, after the image preflight
(``sweep/preflight.py``), and passes the secrets named in its
``DockerOptions.secret_env`` to every server.
A ``SweepBackend`` is its own ``BackendSource``; a ``PoolSource`` finds each SKU's pool
in a pools file, and its subclasses build that pool's backend: ``sweep/pooled.py``
spreads SKUs over runner-pool hosts, ``sweep/slurm_backends.py`` over Slurm pools.
Each backend's ``prepare`` stops what dead runs left on it (``ownership.Reaped``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol

import docker

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.multinode import job_spec
from inferx_pipeline.engines.sim import SimAdapter, SimOptions
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.base import Launcher
from inferx_pipeline.launch.docker import DockerLauncher
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.docker_probe import DockerProbeRunner
from inferx_pipeline.launch.host_gpus import HostGpu
from inferx_pipeline.launch.local import LocalFacts, LocalHost, LocalLauncher
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.ownership import ProcessLedger, Reaped
from inferx_pipeline.launch.pools import PoolT, SkuPools
from inferx_pipeline.launch.preflight import FactCache
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.sweep.preflight import ImagePreflight, Preflight, no_preflight
from inferx_pipeline.sweep.reuse import DigestSource, DockerDigests, FixedDigests, simulated_digest

SpecBuilder = Callable[[BenchmarkJob], ServerSpec]


def _nothing_to_reap() -> Reaped:
    return Reaped(kind="server")


@dataclass(frozen=True)
class SweepBackend:
    """A launcher and what the runner needs to drive it."""

    launcher: Launcher
    specs: SpecBuilder = field(repr=False)
    vendor_of: Callable[[str], str] = field(repr=False)
    digests: DigestSource
    preflight: Preflight = no_preflight
    simulated: bool = False
    # Run once before the first server starts: stop the servers of dead runs.
    prepare: Callable[[], Reaped] = field(default=_nothing_to_reap, repr=False)

    def for_sku(self, sku: str) -> SweepBackend:
        """Every SKU runs here."""
        return self


class BackendSource(Protocol):
    """Where the groups of one SKU run (``run_sweep`` asks once per server group)."""

    def for_sku(self, sku: str) -> SweepBackend:
        """The backend for ``sku``; LaunchError when none can serve it."""
        ...


class PoolSource(ABC, Generic[PoolT]):
    """A ``BackendSource`` over the pools of a file; ``origin`` names the file in errors.

    Subclasses say how a pool's backend is built (``for_sku``).
    """

    def __init__(self, pools: SkuPools[PoolT], *, origin: str) -> None:
        self.pools = pools
        self.origin = origin

    def pool(self, sku: str) -> tuple[str, PoolT]:
        """The (name, pool) serving ``sku``; LaunchError naming the file when none does."""
        try:
            return self.pools.pool_for(sku)
        except LaunchError as err:
            raise LaunchError(f"{self.origin}: {err}") from err

    def require(self, skus: Iterable[str]) -> None:
        """Raise ``LaunchError`` (naming the pools file) for a SKU no pool serves."""
        for sku in sorted(set(skus)):
            self.pool(sku)

    @abstractmethod
    def for_sku(self, sku: str) -> SweepBackend:
        """The backend for ``sku``'s pool; LaunchError when none can serve it."""


def engine_specs(catalog: Catalog) -> SpecBuilder:
    """Each job's own engine adapter, on its SKU."""
    return lambda job: job_spec(job, catalog.sku(job.sku))


def sim_specs(catalog: Catalog, options: SimOptions) -> SpecBuilder:
    """The simulator standing in for each job's engine on its SKU."""
    adapter = SimAdapter(options)
    return lambda job: job_spec(job, catalog.sku(job.sku), adapter)


def job_specs(catalog: Catalog, sim: SimOptions | None, store: ModelStore) -> SpecBuilder:
    """The simulator standing in for each job (``sim``), else the job's own engine.

    A real engine is measured with its model's own tokenizer from ``store`` (the model
    store of the host or pool it runs on, see ``with_tokenizer``).
    """
    if sim is not None:
        return sim_specs(catalog, sim)
    return with_tokenizer(engine_specs(catalog), store)


def with_secrets(specs: SpecBuilder, names: tuple[str, ...]) -> SpecBuilder:
    """``specs`` with ``names`` added to each spec's ``secret_env`` (values stay out of specs)."""

    def build(job: BenchmarkJob) -> ServerSpec:
        spec = specs(job)
        return spec.model_copy(update={"secret_env": tuple(dict.fromkeys(spec.secret_env + names))})

    return build


def sku_vendor(catalog: Catalog) -> Callable[[str], str]:
    """SKU id -> its GPU vendor in ``catalog``."""
    return lambda sku: catalog.sku(sku).vendor


def simulator_backend(
    catalog: Catalog,
    log_dir: Path,
    options: SimOptions | None = None,
    *,
    ledger: ProcessLedger | None = None,
    run_id: str = "",
) -> SweepBackend:
    """Every job on a simulated server run as a child process (no Docker, no GPU).

    With ``ledger`` each server is recorded as owned by ``run_id``, and the first server
    of the sweep is preceded by stopping those of dead runs (``ledger.reap``).
    """
    return SweepBackend(
        launcher=SubprocessLauncher(log_dir, ledger=ledger, run_id=run_id),
        specs=sim_specs(catalog, options or SimOptions()),
        vendor_of=sku_vendor(catalog),
        digests=FixedDigests(simulated_digest(options)),
        simulated=True,
        prepare=ledger.reap if ledger else _nothing_to_reap,
    )


def with_tokenizer(specs: SpecBuilder, store: ModelStore) -> SpecBuilder:
    """``specs`` whose client measures with the model's own tokenizer from ``store``.

    A real run never falls back to the simulator's word tokenizer: a model without a
    tokenizer in the store is a LaunchError before anything starts.
    """

    def build(job: BenchmarkJob) -> ServerSpec:
        spec = specs(job)
        client = spec.client.model_copy(
            update={"tokenizer": store.tokenizer(spec.client.model_name)}
        )
        return spec.model_copy(update={"client": client})

    return build


def local_backend(
    catalog: Catalog,
    host: LocalHost,
    log_dir: Path,
    *,
    environ: Mapping[str, str] | None = None,
    ledger: ProcessLedger | None = None,
    run_id: str = "",
    gpus: Sequence[HostGpu] = (),
) -> SweepBackend:
    """Each job's real engine as a process group on this host (``launch/local.py``) on
    ``gpus`` (``nvidia_gpus``); ``ledger`` and ``run_id`` as for ``simulator_backend``."""
    facts = LocalFacts(host)
    launcher = LocalLauncher(
        host, log_dir, environ=environ, ledger=ledger, run_id=run_id, gpus=gpus
    )
    return SweepBackend(
        launcher=launcher,
        specs=with_tokenizer(engine_specs(catalog), host.models),
        vendor_of=sku_vendor(catalog),
        digests=facts,
        preflight=facts,
        simulated=False,
        prepare=ledger.reap if ledger else _nothing_to_reap,
    )


def docker_backend(
    client: docker.DockerClient,
    catalog: Catalog,
    *,
    run_id: str,
    log_dir: Path,
    facts: FactCache,
    policy: PolicyData,
    docker_options: DockerOptions | None = None,
    sim: SimOptions | None = None,
    environ: Mapping[str, str] | None = None,
) -> SweepBackend:
    """Jobs as containers on ``client``'s host: real engines, or the simulator image (``sim``).

    Each group's image is preflighted first (facts cached in ``facts``, rules from
    ``policy``); ``environ`` (default: this process's) is where secrets come from.
    """
    options = docker_options or DockerOptions()
    launcher = DockerLauncher(
        client, run_id=run_id, log_dir=log_dir, options=options, environ=environ
    )
    runner = DockerProbeRunner(client, pull=options.pull)
    return SweepBackend(
        launcher=launcher,
        specs=with_secrets(job_specs(catalog, sim, options.model_store()), options.secret_env),
        vendor_of=sku_vendor(catalog),
        digests=DockerDigests(client),
        preflight=ImagePreflight(runner, facts, policy, simulated=sim is not None),
        simulated=sim is not None,
        prepare=launcher.cleanup_orphans,
    )
