"""The Dagster image of deploy/, built offline on the private engine, run on host networking."""

from __future__ import annotations

import json

import pytest
from packaging.utils import canonicalize_name

from tests.deploy.conftest import COMPOSE_FILE, load_yaml
from tests.deploy.test_requirements import DAGSTER_SET
from tests.deploy.test_requirements import _pins as pinned
from tests.services.docker_engine import DockerEngine

# The first test builds the image: cold (no layer cache, fresh base image) that takes minutes.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]

RUN_TIMEOUT_S = 120
VERSIONS = """
import importlib.metadata as md, json
import inferx_pipeline, dagster, dagster_docker, dagster_postgres, dagster_webserver
names = ("inferx-pipeline", "dagster", "dagster-webserver", "dagster-docker", "dagster-postgres")
print(json.dumps({n: md.version(n) for n in names}))
"""


def _run(engine: DockerEngine, image: str, *argv: str, user: str | None = None) -> str:
    """stdout+stderr of ``argv`` in a throwaway container; ContainerError on a non-zero exit."""
    container = engine.client.containers.run(
        image, list(argv), network_mode="host", user=user, detach=True
    )
    try:
        status = container.wait(timeout=RUN_TIMEOUT_S)
        logs = container.logs(stdout=True, stderr=True).decode()
        assert status["StatusCode"] == 0, f"{argv} exited {status['StatusCode']}:\n{logs}"
        return logs
    finally:
        container.remove(force=True)


def test_packages_import_at_the_pinned_versions(
    docker_engine: DockerEngine, dagster_image: str
) -> None:
    versions = json.loads(_run(docker_engine, dagster_image, "python3", "-c", VERSIONS))
    pins = pinned()
    assert {name: versions[name] for name in DAGSTER_SET} == {n: pins[n] for n in DAGSTER_SET}
    assert versions["inferx-pipeline"]


def test_installed_set_is_consistent(docker_engine: DockerEngine, dagster_image: str) -> None:
    out = _run(docker_engine, dagster_image, "python3", "-m", "pip", "check")
    assert "No broken requirements found" in out
    frozen = _run(docker_engine, dagster_image, "python3", "-m", "pip", "freeze")
    pairs = (line.split("==", 1) for line in frozen.splitlines() if "==" in line)
    installed = {canonicalize_name(name): version for name, version in pairs}
    pins = pinned()
    drift = {n: (installed.get(n), v) for n, v in pins.items() if installed.get(n) != v}
    assert drift == {}, "installed (image) vs pinned"


def test_compose_commands_exist_in_the_image(
    docker_engine: DockerEngine, dagster_image: str
) -> None:
    compose = load_yaml(COMPOSE_FILE)
    wanted = {"dagster", "dagster-webserver", "dagster-daemon", "inferx", "python3", "git"}
    for name in ("user-code", "webserver"):
        wanted.add(compose["services"][name]["command"][0])
    script = " && ".join(f"command -v {exe}" for exe in sorted(wanted))
    found = _run(docker_engine, dagster_image, "sh", "-c", script).split()
    assert len(found) == len(wanted), found
    assert all(path.startswith(("/opt/inferx/bin/", "/usr/bin/")) for path in found), found


def test_runs_unprivileged_with_the_project_data(
    docker_engine: DockerEngine, dagster_image: str
) -> None:
    script = (
        'id -u; echo "$INFERX_ROOT" "$DAGSTER_HOME" "$INFERX_STATE_DIR"; '
        'ls "$INFERX_ROOT"; ls "$INFERX_ROOT/recipes" | head -1; '
        'touch "$INFERX_STATE_DIR/w" /var/lib/dagster/w "$DAGSTER_HOME/w" && echo writable'
    )
    lines = _run(docker_engine, dagster_image, "sh", "-c", script).splitlines()
    assert lines[0] == "10001"
    assert lines[1] == "/srv/inferx /opt/dagster/dagster_home /var/lib/inferx"
    assert lines[2:5] == ["catalog", "golden_al_distribution", "recipes"]
    assert lines[5], "no recipes in the image"
    assert lines[-1] == "writable"
