"""Runner-pool backends: SKU -> pool -> host in turn, unreachable hosts skipped, unknown SKUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.pools import DockerHost, load_pools
from inferx_pipeline.sweep.backends import SweepBackend
from inferx_pipeline.sweep.pooled import PooledBackends
from tests.sweep.conftest import sim_backend

POOLS = """source: test inventory
pools:
  h200-dgx:
    skus: [h200]
    docker: {shm_size: 32g}
    hosts: [{url: 'unix:///a.sock'}, {url: 'unix:///down.sock'}, {url: 'unix:///c.sock'}]
  amd:
    skus: [mi300x, mi325x]
    hosts: [{url: 'unix:///m.sock'}]
"""


class FakeClients:
    """``connect`` for the source: a token per host; hosts named ``down`` refuse."""

    def __init__(self) -> None:
        self.connected: list[str] = []

    def __call__(self, host: DockerHost) -> Any:
        if "down" in host.url:
            raise LaunchError(f"Docker host {host.url} is not reachable: refused")
        self.connected.append(host.url)
        return host.url


def _source(tmp_path: Path, catalog: Catalog) -> tuple[PooledBackends, FakeClients, list[Any]]:
    path = tmp_path / "runner-pools.yaml"
    path.write_text(POOLS)
    built: list[tuple[Any, DockerOptions]] = []
    base = sim_backend(catalog, tmp_path)

    def build(client: Any, options: DockerOptions) -> SweepBackend:
        built.append((client, options))
        return SweepBackend(
            launcher=base.launcher, specs=base.specs, vendor_of=base.vendor_of,
            digests=base.digests,
        )  # fmt: skip

    clients = FakeClients()
    pools = load_pools(path, environ={})
    return PooledBackends(pools, origin=str(path), build=build, connect=clients), clients, built


def test_groups_take_a_pools_hosts_in_turn_skipping_unreachable_ones(
    tmp_path: Path, catalog: Catalog
) -> None:
    source, clients, built = _source(tmp_path, catalog)
    picks = [source.for_sku("h200") for _ in range(4)]
    assert clients.connected == ["unix:///a.sock", "unix:///c.sock"]
    assert picks[0] is picks[2] and picks[1] is picks[3] and picks[0] is not picks[1]
    assert [options.shm_size for _, options in built] == ["32g", "32g"]
    assert source.for_sku("mi325x") is source.for_sku("mi300x")  # one host, one backend


def test_unknown_sku_names_the_pools_file_and_its_skus(tmp_path: Path, catalog: Catalog) -> None:
    source, _, _ = _source(tmp_path, catalog)
    source.require(["h200", "mi300x"])
    with pytest.raises(LaunchError) as info:
        source.require(["h200", "b200"])
    assert str(info.value) == (
        f"{tmp_path / 'runner-pools.yaml'}: no runner pool serves SKU 'b200'; it has pools "
        "h200-dgx (h200), amd (mi300x, mi325x); add the SKU to a pool's skus or add a pool "
        "with skus: ['*']"
    )


def test_a_pool_with_no_reachable_host_is_a_launch_error(tmp_path: Path, catalog: Catalog) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text("source: t\npools:\n  p: {skus: ['*'], hosts: [{url: 'unix:///down.sock'}]}\n")

    def never(client: Any, options: DockerOptions) -> SweepBackend:
        raise AssertionError("no host answered: nothing to build")

    source = PooledBackends(
        load_pools(path, environ={}), origin=str(path), build=never, connect=FakeClients()
    )
    with pytest.raises(LaunchError, match=r"runner pool 'p' has no reachable Docker host: "
                       r"Docker host unix:///down\.sock is not reachable"):  # fmt: skip
        source.for_sku("h100")
