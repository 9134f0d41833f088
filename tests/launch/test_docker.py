"""DockerLauncher against the private dockerd and the real simulator image."""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.errors import NotFound

from inferx_pipeline.errors import LaunchError, ServerExitedError
from inferx_pipeline.launch.docker import LABEL_OWNER, DockerHandle, DockerLauncher
from inferx_pipeline.launch.docker_args import DockerOptions
from inferx_pipeline.launch.ownership import Owner
from tests.launch.specs import sim_spec
from tests.services.docker_engine import DockerEngine

pytestmark = pytest.mark.docker

DEADLINE_S = 30.0
# This machine's dockerd lacks CAP_SYS_RESOURCE: memlock can go no higher than our own limit.
MEMLOCK = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
OPTIONS = DockerOptions(pull="never", grace_s=5, shm_size="256m", memlock_bytes=MEMLOCK)


@pytest.fixture
def launcher(
    docker_engine: DockerEngine, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[DockerLauncher]:
    run_id = f"test-{request.node.name[:40]}"
    yield DockerLauncher(
        docker_engine.client,
        run_id=run_id,
        log_dir=tmp_path / "logs",
        options=OPTIONS,
        environ={"HF_TOKEN": "hf_not_a_real_token_42"},
    )
    for container in docker_engine.client.containers.list(
        all=True, filters={"label": f"inferx.run={run_id}"}
    ):
        container.remove(force=True)


def _wait_exited(handle: DockerHandle) -> int:
    deadline = time.monotonic() + DEADLINE_S
    while (status := handle.exit_status()) is None:
        assert time.monotonic() < deadline, "container did not exit"
        time.sleep(0.1)  # polling the daemon with a deadline
    return status


def _run_containers(engine: DockerEngine, run_id: str) -> list[Any]:
    found: list[Any] = engine.client.containers.list(
        all=True, filters={"label": f"inferx.run={run_id}"}
    )
    return found


def test_sim_container_runs_labelled_healthy_then_is_removed_with_logs_kept(
    docker_engine: DockerEngine, sim_image: str, launcher: DockerLauncher
) -> None:
    spec = sim_spec("--load-time-s", "0.3", image=sim_image, labels={"team": "perf"})
    with launcher.start(spec) as server:
        container = docker_engine.client.containers.get(server.container_id)
        assert container.labels == {
            "team": "perf",
            "inferx.job": "sim-h200",
            "inferx.fingerprint": "f" * 64,
            "inferx.run": launcher.run_id,
            LABEL_OWNER: Owner.current(launcher.run_id).label,
        }
        host_config = container.attrs["HostConfig"]
        assert (host_config["NetworkMode"], host_config["IpcMode"]) == ("host", "host")
        assert {u["Name"]: u["Soft"] for u in host_config["Ulimits"]} == {
            "memlock": MEMLOCK,
            "stack": 64 * 1024 * 1024,
        }
        server.wait_healthy()
        assert server.exit_status() is None
        assert server.image_digest.startswith("sha256:")
    with pytest.raises(NotFound):
        docker_engine.client.containers.get(server.container_id)
    assert "INFERX_SIM_LISTENING" in server.log_path.read_text()
    assert server.exit_status() == 0


def test_container_killed_mid_run_reports_137_keeps_logs_leaves_nothing(
    docker_engine: DockerEngine, sim_image: str, launcher: DockerLauncher
) -> None:
    with launcher.start(sim_spec("--load-time-s", "0", image=sim_image)) as server:
        server.wait_healthy()
        docker_engine.client.containers.get(server.container_id).kill()
        assert _wait_exited(server) == 137
        with pytest.raises(ServerExitedError, match="exited with status 137 \\(killed\\)") as info:
            server.raise_if_exited()
        assert info.value.status == 137
        assert any("INFERX_SIM_LISTENING" in line for line in info.value.log_tail)
    assert _run_containers(docker_engine, launcher.run_id) == []
    assert any("INFERX_SIM_LISTENING" in line for line in server.logs())


def test_exception_inside_block_removes_the_container(
    docker_engine: DockerEngine, sim_image: str, launcher: DockerLauncher
) -> None:
    with pytest.raises(KeyboardInterrupt), launcher.start(sim_spec(image=sim_image)):
        raise KeyboardInterrupt
    assert _run_containers(docker_engine, launcher.run_id) == []


def test_orphans_of_a_crashed_run_are_removed_and_the_current_run_kept(
    docker_engine: DockerEngine, sim_image: str, launcher: DockerLauncher, tmp_path: Path
) -> None:
    crashed = DockerLauncher(
        docker_engine.client, run_id="crashed-run", log_dir=tmp_path / "old",
        options=launcher.options,
    )  # fmt: skip
    orphan = crashed.start(sim_spec(image=sim_image, name="left-behind"))  # never stopped
    with launcher.start(sim_spec(image=sim_image)) as current:
        assert launcher.cleanup_orphans("some-other-run") == []
        removed = launcher.cleanup_orphans()
        assert removed == [orphan.container.name]
        assert _run_containers(docker_engine, "crashed-run") == []
        assert current.exit_status() is None
        assert (launcher.log_dir / f"orphan-{orphan.container.name}.log").is_file()
    orphan.stop()  # already gone: stop is a no-op that must not raise


def test_secret_passed_by_name_reaches_the_container_but_no_record(
    docker_engine: DockerEngine,
    sim_image: str,
    launcher: DockerLauncher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "hf_not_a_real_token_42"
    spec = sim_spec(
        "--load-time-s", "0", image=sim_image, secret_env=("HF_TOKEN",), env={"PLAIN": "1"}
    )
    with caplog.at_level(logging.DEBUG), launcher.start(spec) as server:
        env = docker_engine.client.containers.get(server.container_id).attrs["Config"]["Env"]
        assert f"HF_TOKEN={secret}" in env
        assert "PLAIN=1" in env
        server.wait_healthy()
    assert secret not in spec.model_dump_json()
    assert secret not in server.log_path.read_text()
    assert secret not in caplog.text


def test_missing_image_with_pull_never_is_a_launch_error(
    docker_engine: DockerEngine, launcher: DockerLauncher
) -> None:
    with pytest.raises(LaunchError, match="image inferx-nope:1 is not on the Docker host"):
        launcher.start(sim_spec(image="inferx-nope:1"))
