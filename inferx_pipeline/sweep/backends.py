"""Where a sweep's servers run: a launcher plus how jobs become specs on it.

``simulator_backend`` is the embedded default: every job runs on ``inferx sim serve``
as a child process, standing in for the job's SKU with that SKU's catalog data.
``docker_backend`` runs each job's real engine image (or, with ``sim_image``, the
simulator image) through the Docker launcher.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.engines.sim import SimAdapter, SimOptions
from inferx_pipeline.launch.base import Launcher
from inferx_pipeline.launch.docker import DockerLauncher
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.lifecycle import Preflight, no_preflight
from inferx_pipeline.sweep.reuse import DigestSource, DockerDigests, FixedDigests, simulated_digest

SpecBuilder = Callable[[BenchmarkJob], ServerSpec]


@dataclass(frozen=True)
class SweepBackend:
    """A launcher and what the runner needs to drive it."""

    launcher: Launcher
    specs: SpecBuilder = field(repr=False)
    vendor_of: Callable[[str], str] = field(repr=False)
    digests: DigestSource
    preflight: Preflight = no_preflight
    simulated: bool = False
    # Run once before the first server starts (Docker: remove orphans of crashed runs).
    prepare: Callable[[], object] = field(default=lambda: None, repr=False)


def engine_specs(catalog: Catalog) -> SpecBuilder:
    """Each job's own engine adapter, on its SKU."""
    return lambda job: adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))


def sim_specs(catalog: Catalog, options: SimOptions) -> SpecBuilder:
    """The simulator standing in for each job's engine on its SKU."""
    adapter = SimAdapter(options)
    return lambda job: adapter.server_spec(job, sku=catalog.sku(job.sku))


def _vendor_of(catalog: Catalog) -> Callable[[str], str]:
    return lambda sku: catalog.sku(sku).vendor


def simulator_backend(
    catalog: Catalog, log_dir: Path, options: SimOptions | None = None
) -> SweepBackend:
    """Every job on a simulated server run as a child process (no Docker, no GPU)."""
    return SweepBackend(
        launcher=SubprocessLauncher(log_dir),
        specs=sim_specs(catalog, options or SimOptions()),
        vendor_of=_vendor_of(catalog),
        digests=FixedDigests(simulated_digest()),
        simulated=True,
    )


def docker_backend(
    client: docker.DockerClient,
    catalog: Catalog,
    *,
    run_id: str,
    log_dir: Path,
    docker_options: DockerOptions | None = None,
    sim: SimOptions | None = None,
    preflight: Preflight = no_preflight,
) -> SweepBackend:
    """Jobs as containers on ``client``'s host: real engines, or the simulator image (``sim``)."""
    launcher = DockerLauncher(client, run_id=run_id, log_dir=log_dir, options=docker_options)
    return SweepBackend(
        launcher=launcher,
        specs=engine_specs(catalog) if sim is None else sim_specs(catalog, sim),
        vendor_of=_vendor_of(catalog),
        digests=DockerDigests(client),
        preflight=preflight,
        simulated=sim is not None,
        prepare=launcher.cleanup_orphans,
    )
