"""deploy/dagster.yaml loaded into a real Dagster instance on the private PostgreSQL cluster."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator

import dagster as dg
import pytest
from dagster_docker import DockerRunLauncher
from dagster_postgres import PostgresRunStorage

from tests.deploy.conftest import DAGSTER_YAML, load_yaml
from tests.services.postgres import PostgresServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def instance(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dg.DagsterInstance]:
    """The instance DAGSTER_HOME/dagster.yaml describes, its env pointed at a fresh database.

    One per module: creating Dagster's schema takes seconds, and the tests only read it or
    write keys of their own.
    """
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy2(DAGSTER_YAML, home / "dagster.yaml")
    database = f"dagster_{uuid.uuid4().hex[:12]}"
    admin = postgres_server.admin()
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{database}"')
    env = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_POSTGRES_HOST": postgres_server.host,
        "DAGSTER_POSTGRES_PORT": str(postgres_server.port),
        "DAGSTER_POSTGRES_USER": postgres_server.user,
        # The test cluster trusts loopback; a password still exercises the env reference.
        "DAGSTER_POSTGRES_PASSWORD": "not-checked-by-trust-auth",
        "DAGSTER_POSTGRES_DB": database,
    }
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            inst = dg.DagsterInstance.get()
            try:
                yield inst
            finally:
                inst.dispose()
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.close()


@dg.op
def _noop() -> None:
    """A step for a run record; never executed here."""


@dg.job
def _probe_job() -> None:
    _noop()


def test_runs_queue_and_launch_in_docker_containers(instance: dg.DagsterInstance) -> None:
    assert isinstance(instance.run_coordinator, dg.QueuedRunCoordinator)
    launcher = instance.run_launcher
    assert isinstance(launcher, DockerRunLauncher)
    expected = load_yaml(DAGSTER_YAML)["run_launcher"]["config"]["env_vars"]
    assert list(launcher.env_vars) == expected
    assert {"HF_TOKEN", "INFERX_REGISTRY_PASSWORD", "DAGSTER_POSTGRES_PASSWORD"} <= set(expected)
    assert launcher.networks == ["inferx"]
    volumes = launcher.container_kwargs["volumes"]
    assert "/etc/inferx:/etc/inferx:ro" in volumes, "runner pools and TLS files, read-only"


def test_pools_limit_runs_with_one_slot_unless_configured(instance: dg.DagsterInstance) -> None:
    pools = instance.get_concurrency_config().pool_config
    assert pools.pool_granularity is not None
    assert pools.pool_granularity.value == "run"
    assert pools.default_pool_limit == 1
    # What `inferx dagster pools` does per SKU; read back from PostgreSQL.
    instance.event_log_storage.set_concurrency_slots("gpu-h200", 2)
    assert instance.event_log_storage.get_concurrency_info("gpu-h200").slot_count == 2


def test_storage_is_postgres_through_psycopg2(instance: dg.DagsterInstance) -> None:
    storage = instance.run_storage
    assert isinstance(storage, PostgresRunStorage)
    assert storage.postgres_url.startswith("postgresql+psycopg2://")
    run = instance.create_run_for_job(job_def=_probe_job)
    # Storing an event NOTIFYs watchers: the statement psycopg 3 broke under SQLAlchemy 2.1.
    instance.report_engine_event("deploy probe", run)
    assert [e.message for e in instance.all_logs(run.run_id)] == ["deploy probe"]
    assert instance.get_run_by_id(run.run_id) is not None
    instance.add_dynamic_partitions("image_tags", ["nightly-abc"])
    assert instance.get_dynamic_partitions("image_tags") == ["nightly-abc"]


def test_monitoring_and_retries_recover_crashed_runs_only(instance: dg.DagsterInstance) -> None:
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_start_timeout_seconds == 300
    assert instance.run_monitoring_max_resume_run_attempts == 0
    assert instance.run_retries_enabled
    assert instance.run_retries_max_retries == 2
    assert not instance.run_retries_retry_on_asset_or_op_failure
    assert not instance.telemetry_enabled
