"""The compose services' own commands, run from the deploy image against the private cluster.

The user-code server, daemon and webserver start exactly as docker-compose.yaml starts them
(commands and healthchecks read from the resolved compose file), with deploy/dagster.yaml
and deploy/workspace.yaml mounted, on host networking (the private engine has no bridge):
the listen address becomes 127.0.0.1, ports become free ones, and ``user-code`` resolves
to loopback. No run is launched: run containers join the compose deployment's `inferx`
bridge network, and the test engine runs without bridge networking.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from docker.errors import DockerException
from docker.models.containers import Container

from tests.deploy.conftest import DAGSTER_YAML, DEPLOY, WORKSPACE_YAML, ComposeRun, load_yaml
from tests.services.docker_engine import DockerEngine
from tests.services.postgres import PostgresServer, _free_port

# Run alone, the first test builds the image (minutes, cold) before starting the services.
pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(1800)]

READY_DEADLINE_S = 180.0
POLL_S = 1.0
DAGSTER_HOME = "/opt/dagster/dagster_home"
LOCATION_QUERY = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


@dataclass
class Stack:
    """Containers started for one test module, removed at its end."""

    engine: DockerEngine
    image: str
    env: dict[str, str]
    volumes: dict[str, dict[str, str]]
    ports: dict[str, int]
    containers: dict[str, Container] = field(default_factory=dict)

    def start(self, service: str, command: list[str], **env: str) -> Container:
        container = self.engine.client.containers.run(
            self.image, command, detach=True, network_mode="host",
            environment={**self.env, **env}, volumes=self.volumes,
            extra_hosts={"user-code": "127.0.0.1"}, labels={"inferx.test": "deploy-stack"},
        )  # fmt: skip
        self.containers[service] = container
        return container


def _listen_on(command: list[str], port: int) -> list[str]:
    """``command`` with its --host on loopback and its --port on ``port``."""
    out = list(command)
    out[out.index("--host") + 1] = "127.0.0.1"
    out[out.index("--port") + 1] = str(port)
    return out


def _until_ok(container: Container, argv: list[str], deadline_s: float = READY_DEADLINE_S) -> str:
    """Run ``argv`` in ``container`` until it exits 0; fail with its logs at the deadline."""
    deadline = time.monotonic() + deadline_s
    while True:
        container.reload()
        if container.status == "exited":
            pytest.fail(f"{container.name} exited:\n{container.logs().decode()[-4000:]}")
        code, out = container.exec_run(argv)
        if code == 0:
            return str(out.decode())
        if time.monotonic() > deadline:
            logs = container.logs().decode()[-4000:]
            pytest.fail(f"{argv} still failing after {deadline_s:.0f} s: {out!r}\n{logs}")
        time.sleep(POLL_S)  # poll interval; the deadline decides


def _database(server: PostgresServer, name: str) -> str:
    admin = server.admin()
    try:
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    return name


def _drop(server: PostgresServer, *names: str) -> None:
    admin = server.admin()
    try:
        with admin.cursor() as cur:
            for name in names:
                cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


def _config_files(root: Path, grpc_port: int) -> dict[str, dict[str, str]]:
    """Host files -> container mounts, as docker-compose.yaml mounts them."""
    etc = root / "etc-inferx"
    etc.mkdir()
    shutil.copy2(DEPLOY / "runner-pools.example.yaml", etc / "runner-pools.yaml")
    shutil.copy2(DEPLOY / "registries.example.yaml", etc / "registries.yaml")
    workspace = root / "workspace.yaml"
    text = WORKSPACE_YAML.read_text()
    assert "port: 4000" in text
    workspace.write_text(text.replace("port: 4000", f"port: {grpc_port}"))
    for path in (etc, root):
        path.chmod(0o755)  # the image runs as uid 10001
    return {
        str(DAGSTER_YAML): {"bind": f"{DAGSTER_HOME}/dagster.yaml", "mode": "ro"},
        str(workspace): {"bind": "/opt/dagster/workspace.yaml", "mode": "ro"},
        str(etc): {"bind": "/etc/inferx", "mode": "ro"},
    }


@pytest.fixture(scope="module")
def stack(
    docker_engine: DockerEngine,
    dagster_image: str,
    postgres_server: PostgresServer,
    resolved_compose: ComposeRun,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """user-code (healthy first, as compose's depends_on), then the daemon and webserver."""
    suffix = uuid.uuid4().hex[:10]
    dagster_db = _database(postgres_server, f"dagster_{suffix}")
    results_db = _database(postgres_server, f"results_{suffix}")
    ports = {"grpc": _free_port(), "web": _free_port()}
    env = {
        "DAGSTER_POSTGRES_HOST": postgres_server.host,
        "DAGSTER_POSTGRES_PORT": str(postgres_server.port),
        "DAGSTER_POSTGRES_USER": postgres_server.user,
        "DAGSTER_POSTGRES_PASSWORD": "not-checked-by-trust-auth",
        "DAGSTER_POSTGRES_DB": dagster_db,
        "INFERX_DATABASE_URL": postgres_server.url(results_db),
        "INFERX_LAUNCHER": "docker",
        "INFERX_RUNNER_POOLS": "/etc/inferx/runner-pools.yaml",
        "INFERX_REGISTRIES": "/etc/inferx/registries.yaml",
    }
    volumes = _config_files(tmp_path_factory.mktemp("stack"), ports["grpc"])
    built = Stack(docker_engine, dagster_image, env, volumes, ports)
    try:
        _start_in_compose_order(built, _services(resolved_compose))
        yield built
    finally:
        for container in built.containers.values():
            with contextlib.suppress(DockerException):
                container.remove(force=True)
        _drop(postgres_server, dagster_db, results_db)


def _services(resolved_compose: ComposeRun) -> dict[str, Any]:
    return dict(resolved_compose.data["services"])


def _healthcheck(service: dict[str, Any], port: int | None = None) -> list[str]:
    test = list(service["healthcheck"]["test"])
    assert test[0] == "CMD"
    argv = test[1:]
    if port is not None:
        argv = [a.replace("3000", str(port)) if "3000" in a else a for a in argv]
        argv = [str(port) if a == "4000" else a for a in argv]
    return argv


def _start_in_compose_order(stack: Stack, services: dict[str, Any]) -> None:
    grpc, web = stack.ports["grpc"], stack.ports["web"]
    code = stack.start(
        "user-code",
        _listen_on(services["user-code"]["command"], grpc),
        DAGSTER_CURRENT_IMAGE=stack.image,
    )
    _until_ok(code, _healthcheck(services["user-code"], grpc))
    stack.start("daemon", services["daemon"]["command"])
    stack.start("webserver", _listen_on(services["webserver"]["command"], web))


def test_webserver_and_daemon_pass_their_healthchecks(
    stack: Stack, resolved_compose: ComposeRun
) -> None:
    services = _services(resolved_compose)
    _until_ok(
        stack.containers["webserver"], _healthcheck(services["webserver"], stack.ports["web"])
    )
    _until_ok(stack.containers["daemon"], _healthcheck(services["daemon"]))


def test_webserver_loads_the_code_location_from_user_code(
    stack: Stack, resolved_compose: ComposeRun
) -> None:
    web = stack.ports["web"]
    _until_ok(
        stack.containers["webserver"], _healthcheck(_services(resolved_compose)["webserver"], web)
    )
    request = urllib.request.Request(
        f"http://127.0.0.1:{web}/graphql",
        data=json.dumps({"query": LOCATION_QUERY}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        entries = json.load(response)["data"]["workspaceOrError"]["locationEntries"]
    assert [(e["name"], e["loadStatus"]) for e in entries] == [("inferx", "LOADED")]
    assert entries[0]["locationOrLoadError"]["__typename"] == "RepositoryLocation", entries


def _printed_pools(daemon: Container) -> dict[str, str]:
    """The ``gpu-<sku>: <limit>`` lines `inferx dagster pools` printed before the daemon."""
    out = daemon.logs(stdout=True, stderr=True).decode()
    return dict(line.split(": ", 1) for line in out.splitlines() if line.startswith("gpu-"))


def test_daemon_writes_the_runner_pool_limits_before_it_starts(
    stack: Stack, resolved_compose: ComposeRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    daemon = stack.containers["daemon"]
    # Live means `dagster-daemon run` replaced the shell, so `inferx dagster pools` is done.
    _until_ok(daemon, _healthcheck(_services(resolved_compose)["daemon"]))
    printed = _printed_pools(daemon)
    pools = load_yaml(DEPLOY / "runner-pools.example.yaml")["pools"]
    assert printed.get("gpu-h200") == str(pools["h200-dgx"]["nodes"]), printed
    assert printed.get("gpu-mi355x") == str(pools["mi355x"]["nodes"]), printed
    # Read back from the instance the daemon uses, through the same dagster.yaml.
    shutil.copy2(DAGSTER_YAML, tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    for name, value in stack.env.items():
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.get() as instance:
        slots = {
            pool: instance.event_log_storage.get_concurrency_info(pool).slot_count
            for pool in printed
        }
    assert slots == {pool: int(limit) for pool, limit in printed.items()}
