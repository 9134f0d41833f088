"""Runner pools: which Docker hosts serve which GPU SKUs, from data (never from code).

::

    # deploy/runner-pools.yaml
    source: fleet inventory, 2025-06
    pools:
      h200-dgx:
        skus: [h200]
        nodes: 2                  # how many runs may use this SKU at once (Dagster pool limit)
        docker: {hf_cache: /data/hf, shm_size: 32g}   # DockerOptions for its containers
        hosts:
          - url: tcp://gpu-h200-01:2376
            tls: {cert: tls/cert.pem, key: tls/key.pem, ca: tls/ca.pem}   # paths, never PEM

Without a file, the embedded default is one pool ``local`` for every SKU (``"*"``) on
``DOCKER_HOST`` or the default socket. Relative TLS paths are relative to the file.
``HostRotation`` picks a host for each server group: a pool's hosts in turn.

``SkuPool`` and ``SkuPools`` are what Docker and Slurm pools share (``slurm_pools.py``):
the SKUs a pool serves, its Dagster limit, and the lookup of a SKU's pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

import docker
import yaml
from docker.errors import DockerException
from docker.tls import TLSConfig
from pydantic import Field, ValidationError, field_validator, model_validator

from inferx_pipeline.errors import CatalogError, LaunchError
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.strict import FrozenModel, StrictModel

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
ANY_SKU = "*"
HOST_SCHEMES = ("unix://", "tcp://", "ssh://")


class TlsFiles(FrozenModel):
    """Client TLS material for a ``tcp://`` host, as file paths."""

    cert: Path = Field(description="Client certificate (PEM file).")
    key: Path = Field(description="Client private key (PEM file).")
    ca: Path | None = Field(default=None, description="CA bundle that signed the daemon's cert.")
    verify: bool = Field(default=True, description="Verify the daemon's certificate.")

    @field_validator("cert", "key", "ca", mode="before")
    @classmethod
    def _path_not_pem(cls, value: object) -> object:
        if isinstance(value, str) and "-----BEGIN" in value:
            raise ValueError("TLS material goes by file path, never inline PEM")
        return value

    def resolved(self, base: Path) -> TlsFiles:
        return TlsFiles(
            cert=base / self.cert,
            key=base / self.key,
            ca=None if self.ca is None else base / self.ca,
            verify=self.verify,
        )


class DockerHost(FrozenModel):
    """One Docker daemon: a ``DOCKER_HOST``-style URL plus optional TLS files."""

    url: str = Field(description="unix:///path, tcp://host:2376 or ssh://user@host.")
    tls: TlsFiles | None = None

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not value.startswith(HOST_SCHEMES):
            raise ValueError(
                f"got {value!r}; expected a URL starting with {', '.join(HOST_SCHEMES)}"
            )
        return value


class SkuPool(FrozenModel):
    """What every pool has: the SKUs it serves and how many runs it takes at once."""

    skus: tuple[str, ...] = Field(min_length=1, description="SKU ids, or '*' for any SKU.")
    nodes: int = Field(default=1, ge=1, description="Concurrent runs allowed (Dagster pool limit).")


PoolT = TypeVar("PoolT", bound=SkuPool)


class SkuPools(StrictModel, Generic[PoolT]):
    """Pools by name; each SKU belongs to at most one (``NOUN`` names the kind in errors)."""

    NOUN: ClassVar[str] = "pool"

    source: str = Field(description="Where this inventory comes from.")
    pools: dict[str, PoolT]

    @model_validator(mode="after")
    def _one_pool_per_sku(self) -> SkuPools[PoolT]:
        seen: dict[str, str] = {}
        for name, pool in self.pools.items():
            for sku in pool.skus:
                if sku in seen:
                    raise ValueError(
                        f"SKU {sku!r} is in pools {seen[sku]!r} and {name!r}; keep one"
                    )
                seen[sku] = name
        return self

    def pool_for(self, sku: str) -> tuple[str, PoolT]:
        """The (name, pool) serving ``sku``: the pool naming it, else the ``'*'`` pool."""
        for wanted in (sku, ANY_SKU):
            for name, pool in self.pools.items():
                if wanted in pool.skus:
                    return name, pool
        raise LaunchError(
            f"no {self.NOUN} serves SKU {sku!r}; it has {self.describe()}; "
            f"add the SKU to a pool's skus or add a pool with skus: ['{ANY_SKU}']"
        )

    def describe(self) -> str:
        """``pools h200-dgx (h200), mi355x (mi355x)``: each pool with the SKUs it serves."""
        listed = ", ".join(f"{name} ({', '.join(pool.skus)})" for name, pool in self.pools.items())
        return f"pools {listed}" if listed else "no pools"


class RunnerPool(SkuPool):
    """Docker hosts that serve some SKUs; ``nodes`` bounds concurrent runs on them."""

    hosts: tuple[DockerHost, ...] = Field(min_length=1)
    docker: DockerOptions = Field(
        default_factory=DockerOptions, description="How containers run on these hosts."
    )


class RunnerPools(SkuPools[RunnerPool]):
    """All Docker runner pools, by name."""

    NOUN: ClassVar[str] = "runner pool"


class HostRotation:
    """Picks a host of a pool for each server group: the pool's hosts in turn (round-robin).

    Sweeps run one group at a time, so rotation spreads successive groups (and the runs
    that share a pool) over its hosts; ``take`` skips a host the caller found unusable.
    """

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def order(self, name: str, pool: RunnerPool) -> list[DockerHost]:
        """``pool``'s hosts starting at the one whose turn it is."""
        start = self._next.get(name, 0) % len(pool.hosts)
        return [*pool.hosts[start:], *pool.hosts[:start]]

    def take(self, name: str, pool: RunnerPool, host: DockerHost) -> None:
        """Record that ``host`` serves this group: the next group starts after it."""
        self._next[name] = pool.hosts.index(host) + 1


def default_pools(environ: Mapping[str, str]) -> RunnerPools:
    """One pool ``local`` for every SKU on ``DOCKER_HOST`` (or the default socket)."""
    host = DockerHost(url=environ.get("DOCKER_HOST") or DEFAULT_SOCKET)
    return RunnerPools(
        source="embedded default: DOCKER_HOST or the local socket",
        pools={"local": RunnerPool(skus=(ANY_SKU,), hosts=(host,), nodes=1)},
    )


def load_pools(path: Path | None, environ: Mapping[str, str]) -> RunnerPools:
    """The pools in ``path``, or the embedded default when ``path`` is None or absent.

    Raises ``CatalogError`` naming the file and field when the file is malformed.
    """
    if path is None or not path.is_file():
        return default_pools(environ)
    try:
        pools = RunnerPools.model_validate(yaml.safe_load(path.read_text()))
    except yaml.YAMLError as err:
        raise CatalogError(f"{path}: not valid YAML: {err}") from err
    except ValidationError as err:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
        raise CatalogError(f"{path}: {where}") from err
    return _resolve_tls(pools, path.parent)


def _resolve_tls(pools: RunnerPools, base: Path) -> RunnerPools:
    resolved = {
        name: pool.model_copy(
            update={
                "hosts": tuple(
                    h if h.tls is None else h.model_copy(update={"tls": h.tls.resolved(base)})
                    for h in pool.hosts
                )
            }
        )
        for name, pool in pools.pools.items()
    }
    return pools.model_copy(update={"pools": resolved})


def docker_client(host: DockerHost, timeout_s: float = 120.0) -> docker.DockerClient:
    """A client for ``host``; raises ``LaunchError`` naming a missing TLS file."""
    tls = None
    if host.tls is not None:
        for path in (host.tls.cert, host.tls.key, host.tls.ca):
            if path is not None and not path.is_file():
                raise LaunchError(f"Docker host {host.url}: TLS file {path} does not exist")
        tls = TLSConfig(
            client_cert=(str(host.tls.cert), str(host.tls.key)),
            ca_cert=None if host.tls.ca is None else str(host.tls.ca),
            verify=str(host.tls.ca) if host.tls.verify and host.tls.ca else host.tls.verify,
        )
    socket_path = host.url.removeprefix("unix://")
    if host.url.startswith("unix://") and not Path(socket_path).is_socket():
        # Checked here: docker-py leaks its socket object on a refused unix connection.
        raise LaunchError(f"Docker host {host.url} is not reachable: no socket at {socket_path}")
    try:
        # The constructor asks the daemon for its API version: this is the reachability check.
        return docker.DockerClient(base_url=host.url, tls=tls or False, timeout=int(timeout_s))
    except DockerException as err:
        raise LaunchError(f"Docker host {host.url} is not reachable: {err}") from err
