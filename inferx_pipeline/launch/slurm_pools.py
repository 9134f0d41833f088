"""Slurm runner pools: which partitions serve which GPU SKUs, and how engines run there (data).

::

    # deploy/slurm-pools.yaml
    kind: slurm
    source: cluster inventory, 2026-12
    pools:
      h200-dgxc:
        skus: [h200]
        cluster: dgxc               # sbatch --clusters (omit for the local cluster)
        partition: batch
        account: bench
        qos: normal
        gres_per_node: "gpu:8"
        time_limit: "04:00:00"      # one server group's allocation
        queue_timeout_s: 7200       # wait in the queue (default 3600); then start-timeout
        runtime: pyxis              # pyxis | docker | apptainer | none
        model_store: {models: {Qwen/Qwen3-0.6B: /lustre/models/qwen3-0.6b}}
        nodes: 4                    # nodes this pool may hold at once (Dagster pool limit)
      mi325x-amds:
        skus: [mi325x]
        partition: amd
        time_limit: "04:00:00"
        runtime: docker             # docker run on each node; the client on the submit host
        docker: {shm_size: 64g}     # + host / daemon_address when one dockerd serves the nodes

A pools file with ``kind: slurm`` is read by ``load_runner_pools`` where a Docker
runner-pools file is accepted (``inferx dagster pools``, ``--pools``), so the per-SKU
Dagster pool limits come from the same ``nodes`` field for either kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

import yaml
from pydantic import Field, model_validator

from inferx_pipeline.catalog import read_model
from inferx_pipeline.envnames import EnvName
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.launch.docker_args import ContainerLimits
from inferx_pipeline.launch.models import ModelStore
from inferx_pipeline.launch.pools import RunnerPools, SkuPool, SkuPools, load_pools

Runtime = Literal["pyxis", "docker", "apptainer", "none"]
# One hour: a partition that cannot place a server group in that long is busy or
# misconfigured (a held job, nodes down, a request no node fits); a pool whose queue
# is known to be longer says so in its queue_timeout_s.
DEFAULT_QUEUE_TIMEOUT_S = 3600.0


class SlurmDocker(ContainerLimits):
    """How the ``docker`` runtime starts engines on the nodes and how the client reaches them.

    By default each node runs its own dockerd and the container shares the node's network
    (``--network=host``), so the client on the submit host reaches it at the node's
    ``NodeAddr``. Where one dockerd serves every node (its socket shared, its network
    elsewhere), ``daemon_address`` says where the containers listen instead.
    """

    host: str | None = Field(
        default=None, description="DOCKER_HOST of the docker CLI on the nodes; None = its default."
    )
    daemon_address: str | None = Field(
        default=None,
        description="Address the submit host reaches the daemon's host network at (one "
        "dockerd for all nodes); None = each node's NodeAddr (a dockerd per node).",
    )
    devices: tuple[str, ...] | None = Field(
        default=None,
        description="docker --device values every container gets, replacing the GPU vendor's "
        "(AMD: /dev/kfd, /dev/dri); None = the vendor's.",
    )


class SlurmPool(SkuPool):
    """One partition (and the account/QoS it is used under) serving some SKUs."""

    cluster: str | None = Field(default=None, description="sbatch --clusters; None = default.")
    partition: str = Field(description="sbatch --partition.")
    account: str | None = Field(default=None, description="sbatch --account.")
    qos: str | None = Field(default=None, description="sbatch --qos.")
    gres_per_node: str | None = Field(
        default=None, description="sbatch --gres, e.g. gpu:8; None = the server's GPU count."
    )
    time_limit: str = Field(
        description="sbatch --time for one server group's allocation, e.g. 04:00:00."
    )
    queue_timeout_s: float = Field(
        default=DEFAULT_QUEUE_TIMEOUT_S,
        gt=0,
        description="How long a server's job may wait in the queue (pending, held, nodes "
        "booting) before it is cancelled as server-start-timeout; the engine's own start "
        "timeout counts only from when the job runs.",
    )
    runtime: Runtime = Field(description="How the engine runs on a node.")
    model_store: ModelStore = Field(
        default_factory=ModelStore, description="Where checkpoints lie on the nodes."
    )
    nodes: int = Field(default=1, ge=1, description="Nodes held at once (Dagster pool limit).")
    replicas: int = Field(
        default=1, ge=1, description="Engine replicas per allocation, one per node (data parallel)."
    )
    programs: dict[str, str] = Field(
        default_factory=dict,
        description="Runtime none: argv[0] of the adapters -> executable on the nodes.",
    )
    log_dir: Path | None = Field(
        default=None,
        description="Shared folder for job output (seen by nodes and submit host); "
        "None = the sweep's log folder.",
    )
    secret_env: tuple[EnvName, ...] = Field(
        default=(), description="Secrets passed to every engine, by name."
    )
    extra_args: tuple[str, ...] = Field(
        default=(), description="More sbatch options, verbatim (e.g. --exclusive)."
    )
    docker: SlurmDocker = Field(
        default_factory=SlurmDocker, description="Runtime docker: daemon, limits, devices."
    )

    @model_validator(mode="after")
    def _replicas_fit(self) -> SlurmPool:
        if self.replicas > self.nodes:
            raise ValueError(f"replicas {self.replicas} need as many nodes; nodes is {self.nodes}")
        if self.docker.daemon_address and self.replicas > 1:
            # Every replica's container would listen in the one daemon's network, on one port.
            raise ValueError(
                f"docker.daemon_address (one dockerd for all nodes) serves one replica; "
                f"replicas is {self.replicas}: set replicas: 1 or run a dockerd per node"
            )
        return self


class SlurmPools(SkuPools[SlurmPool]):
    """All Slurm pools, by name (the ``kind: slurm`` tells the file from a Docker one)."""

    NOUN: ClassVar[str] = "Slurm pool"

    kind: Literal["slurm"]


def load_slurm_pools(path: Path) -> SlurmPools:
    """The Slurm pools in ``path``; CatalogError naming the file and field when malformed."""
    if not path.is_file():
        raise CatalogError(f"{path}: no Slurm pools file; pass --pools with a kind: slurm file")
    return read_model(path, SlurmPools, "Slurm pools")


def pools_kind(path: Path | None) -> str:
    """``slurm`` for a file whose top-level ``kind`` says so, else ``docker``."""
    if path is None or not path.is_file():
        return "docker"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read runner pools: {err}") from err
    return "slurm" if isinstance(data, dict) and data.get("kind") == "slurm" else "docker"


def load_runner_pools(path: Path | None, environ: Mapping[str, str]) -> RunnerPools | SlurmPools:
    """Docker or Slurm pools from ``path`` (by its ``kind``); the Docker default without one."""
    if pools_kind(path) == "slurm":
        assert path is not None  # pools_kind says docker for no file
        return load_slurm_pools(path)
    return load_pools(path, environ)
