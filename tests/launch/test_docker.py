"""DockerLauncher against the private dockerd and the real simulator image: labels, exits,
secrets, and the removal of what dead owners left (also when a log cannot be read)."""

from __future__ import annotations

import contextlib
import logging
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.errors import NotFound
from docker.types import LogConfig

from inferx_pipeline.errors import LaunchError, ServerExitedError
from inferx_pipeline.launch.base import LogBuffer
from inferx_pipeline.launch.docker import (
    LABEL_OWNER,
    ContainerSummary,
    DockerHandle,
    DockerLauncher,
    labelled_containers,
)
from inferx_pipeline.launch.docker_args import LABEL_RUN, DockerOptions
from inferx_pipeline.launch.ownership import Owner
from tests.launch.owners import dead_owner
from tests.launch.specs import make_spec, sim_spec
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
    for container in _run_containers(docker_engine, run_id):
        docker_engine.client.api.remove_container(container.id, force=True)


def _wait_exited(handle: DockerHandle) -> int:
    deadline = time.monotonic() + DEADLINE_S
    while (status := handle.exit_status()) is None:
        assert time.monotonic() < deadline, "container did not exit"
        time.sleep(0.1)  # polling the daemon with a deadline
    return status


def _run_containers(engine: DockerEngine, run_id: str) -> list[ContainerSummary]:
    return labelled_containers(engine.client, f"inferx.run={run_id}")


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


def _sleeper(engine: DockerEngine, image: str, name: str, labels: dict[str, str]) -> Any:
    """A running container labelled as a server of some run (``LogConfig`` none: no log)."""
    quiet = LogConfig(type="none") if name.endswith("-unlogged") else None
    return engine.client.containers.run(
        image, ["sleep", "300"], name=name, labels=labels, detach=True, log_config=quiet
    )


def test_containers_of_dead_owners_are_removed_even_unlogged_and_live_ones_kept(
    docker_engine: DockerEngine, base_image: str, launcher: DockerLauncher
) -> None:
    dead, run = dead_owner("crashed-run"), {LABEL_RUN: "crashed-run"}
    made = {
        name: _sleeper(docker_engine, base_image, name, {**run, **owner})
        for name, owner in {
            "ix-orphan": {LABEL_OWNER: dead.label},
            "ix-orphan-unlogged": {LABEL_OWNER: dead.label},  # logs() fails: removed anyway
            "ix-live": {LABEL_OWNER: Owner.current("crashed-run").label},  # this process
            "ix-no-owner": {},  # not provably ours: left alone
        }.items()
    }
    try:
        assert launcher.cleanup_orphans("some-other-run").stopped == ()
        reaped = launcher.cleanup_orphans()
        left = {c.name for c in _run_containers(docker_engine, "crashed-run")}
        assert left == {"ix-live", "ix-no-owner"}
        assert sorted(reaped.stopped) == ["ix-orphan", "ix-orphan-unlogged"]
        assert reaped.failed == {} and reaped.note() is None
        saved = (launcher.log_dir / "orphan-ix-orphan-unlogged.log").read_text()
        assert saved.startswith("inferx: reading the log of container ix-orphan-unlogged failed")
        assert (launcher.log_dir / "orphan-ix-orphan.log").is_file()
    finally:
        for container in made.values():
            with contextlib.suppress(NotFound):
                container.remove(force=True)


def test_a_handle_whose_log_cannot_be_read_says_so_and_is_still_removed(
    docker_engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    container = _sleeper(docker_engine, base_image, "ix-handle-unlogged", {})
    spec = make_spec(("sleep",), name="unlogged")
    handle = DockerHandle(spec, container, LogBuffer(tmp_path / "unlogged.log"), 1.0, "sha256:x")
    handle.follow_logs()
    handle.stop()
    with pytest.raises(NotFound):
        docker_engine.client.containers.get(container.id)
    assert any("reading its log failed" in line for line in handle.logs()), handle.logs()


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
