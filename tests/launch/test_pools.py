"""Runner-pool config: loading, the embedded default, SKU lookup, TLS by path only."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import CatalogError, LaunchError
from inferx_pipeline.launch.pools import (
    DockerHost,
    HostRotation,
    TlsFiles,
    docker_client,
    load_pools,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "runner-pools.example.yaml"


def test_example_file_loads_with_tls_paths_relative_to_it() -> None:
    pools = load_pools(EXAMPLE, environ={})
    name, pool = pools.pool_for("h200")
    assert (name, pool.nodes, len(pool.hosts)) == ("h200-dgx", 2, 2)
    tls = pool.hosts[0].tls
    assert tls is not None and tls.ca == EXAMPLE.parent / "tls" / "ca.pem"
    assert pools.pool_for("b200")[0] == "local"  # the '*' pool catches unlisted SKUs


def test_default_is_one_local_pool_on_docker_host(tmp_path: Path) -> None:
    pools = load_pools(tmp_path / "absent.yaml", environ={"DOCKER_HOST": "unix:///tmp/d.sock"})
    name, pool = pools.pool_for("mi355x")
    assert (name, pool.hosts[0].url, pool.nodes) == ("local", "unix:///tmp/d.sock", 1)
    assert load_pools(None, environ={}).pool_for("h100")[1].hosts[0].url == (
        "unix:///var/run/docker.sock"
    )


def test_unserved_sku_and_duplicate_sku_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(
        "source: t\npools:\n  a: {skus: [h200], hosts: [{url: 'unix:///a'}]}\n"
        "  b: {skus: [h200], hosts: [{url: 'unix:///b'}]}\n"
    )
    with pytest.raises(CatalogError, match="SKU 'h200' is in pools 'a' and 'b'"):
        load_pools(path, environ={})
    path.write_text("source: t\npools:\n  a: {skus: [h200], hosts: [{url: 'unix:///a'}]}\n")
    with pytest.raises(LaunchError, match="no runner pool serves SKU 'b200'"):
        load_pools(path, environ={}).pool_for("b200")


def test_inline_pem_and_bad_urls_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(
        "source: t\npools:\n  a:\n    skus: [h200]\n    hosts:\n      - url: tcp://h:2376\n"
        "        tls: {cert: '-----BEGIN CERTIFICATE-----', key: k.pem}\n"
    )
    with pytest.raises(CatalogError, match="by file path, never inline PEM"):
        load_pools(path, environ={})
    path.write_text("source: t\npools:\n  a: {skus: [h200], hosts: [{url: 'h:2376'}]}\n")
    with pytest.raises(CatalogError, match=r"pools\.a\.hosts\.0\.url"):
        load_pools(path, environ={})


def test_client_for_a_host_with_missing_tls_file_names_it(tmp_path: Path) -> None:
    host = DockerHost(
        url="tcp://h:2376", tls=TlsFiles(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    )
    with pytest.raises(LaunchError, match=r"TLS file .*c\.pem does not exist"):
        docker_client(host)


def test_rotation_takes_hosts_in_turn_and_pools_carry_container_options(tmp_path: Path) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(
        "source: t\npools:\n  p:\n    skus: [h200]\n    docker: {shm_size: 32g, pull: never}\n"
        "    hosts: [{url: 'unix:///a'}, {url: 'unix:///b'}, {url: 'unix:///c'}]\n"
    )
    pools = load_pools(path, environ={})
    name, pool = pools.pool_for("h200")
    assert (pool.docker.shm_size, pool.docker.pull) == ("32g", "never")
    assert pools.describe() == "pools p (h200)"
    rotation = HostRotation()
    order = rotation.order(name, pool)
    assert [h.url for h in order] == ["unix:///a", "unix:///b", "unix:///c"]
    rotation.take(name, pool, order[1])  # b served; the next group starts at c
    assert [h.url for h in rotation.order(name, pool)] == ["unix:///c", "unix:///a", "unix:///b"]
    rotation.take(name, pool, pool.hosts[2])
    assert rotation.order(name, pool)[0].url == "unix:///a"
