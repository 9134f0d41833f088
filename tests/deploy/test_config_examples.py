"""The /etc/inferx examples in deploy/ load as the package reads them, with names that flow."""

from __future__ import annotations

import os

from inferx_pipeline.images.registry import RegistryConfig
from inferx_pipeline.launch.pools import load_pools
from tests.deploy.conftest import DAGSTER_YAML, DEPLOY, env_example, load_yaml

REGISTRIES = DEPLOY / "registries.example.yaml"


def test_registries_example_is_a_valid_registry_config() -> None:
    config = RegistryConfig.model_validate(load_yaml(REGISTRIES))
    assert config.host("docker.io").password_env == "INFERX_REGISTRY_PASSWORD"


def test_registry_credentials_reach_sensors_and_run_workers_by_name() -> None:
    config = RegistryConfig.model_validate(load_yaml(REGISTRIES))
    names = {
        name
        for host in config.hosts.values()
        for name in (host.username_env, host.password_env)
        if name is not None
    }
    assert names, "the example names no credential variables"
    env_vars = set(load_yaml(DAGSTER_YAML)["run_launcher"]["config"]["env_vars"])
    assert names <= set(env_example()), "set in .env (sensors in user-code read them)"
    assert names <= env_vars, "passed to run containers (image pulls, tag lookups)"


def test_runner_pools_example_gives_every_tls_file_under_etc_inferx() -> None:
    # Relative TLS paths resolve beside the file: /etc/inferx/tls/... once copied there.
    pools = load_pools(DEPLOY / "runner-pools.example.yaml", os.environ)
    tls = [host.tls for pool in pools.pools.values() for host in pool.hosts if host.tls]
    assert tls
    for files in tls:
        for path in (files.cert, files.key, files.ca):
            assert path is not None
            assert path.is_relative_to(DEPLOY / "tls"), path
