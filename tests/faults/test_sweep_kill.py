"""SIGTERM and SIGKILL of a real ``inferx sweep`` mid-point: simulator, Docker, a real vLLM.

SIGTERM: the sweep stops its server, records the run and exits 130, printing no
traceback. SIGKILL: whatever it left is gone once the next sweep has started, and the
points it finished are intact (the next sweep reuses them).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from inferx_pipeline.launch.docker import labelled_containers
from inferx_pipeline.launch.docker_args import LABEL_RUN
from inferx_pipeline.launch.ownership import ProcessLedger, group_members
from tests.faults.serving import container_in_flight, in_flight
from tests.faults.sweeps import Sweep, assert_points_intact, recorded
from tests.services.docker_engine import DockerEngine
from tests.services.vllm import TINY_RECIPE, CpuHost
from tests.sweep.conftest import SEED
from tests.sweep.test_cli_sweep import FAST_FLAGS
from tests.sweep.test_cli_sweep_docker import pools_file

# Points of about a second, so a signal lands inside one.
SLOW = [f if f != "0.001" else "0.05" for f in FAST_FLAGS]
# A real vLLM on 2 shared cores: start-up and a point can take minutes under load.
REAL_ENGINE_DEADLINE_S = 600.0


def _env(tmp: Path, root: Path) -> dict[str, str]:
    return {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(tmp / "state"), "COLUMNS": "200"}


def _sim_args(tmp: Path) -> list[str]:
    return ["--launcher", "sim", "--recipe", SEED, "--artifacts-dir", str(tmp / "artifacts"),
            *SLOW]  # fmt: skip


def _owned(tmp: Path) -> list[int]:
    return [entry.pgid for entry in ProcessLedger(tmp / "state" / "owned").entries()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_sim_sweep_signalled_mid_point_leaves_no_server(
    signum: signal.Signals, fault_root: Path, tmp_path: Path
) -> None:
    env, artifacts = _env(tmp_path, fault_root), tmp_path / "artifacts"
    sweep = Sweep(_sim_args(tmp_path), env)
    try:
        # Mid-point: a point recorded, and the next one's request being answered.
        sweep.wait_until(lambda: recorded(artifacts) >= 1 and in_flight(_owned(tmp_path)), "point")
        servers = _owned(tmp_path)
        code, output = sweep.signal(signum)
        if signum == signal.SIGTERM:
            assert code == 130, output
            assert len(list(artifacts.glob("runs/*.json"))) == 1  # the run is recorded
            assert "cancelled" in output.rstrip().splitlines()[-1]
            assert "Traceback" not in output, output  # the cut point's cancelled requests
        else:
            assert code == -signal.SIGKILL
            code, output = Sweep(_sim_args(tmp_path), env).finish()
            assert code == 0, output
            assert "reused" in output.rstrip().splitlines()[-1]  # earlier points kept
        assert all(group_members(pgid) == [] for pgid in servers)
        assert _owned(tmp_path) == []
        assert_points_intact(artifacts)
    finally:
        sweep.stop()
        ProcessLedger(tmp_path / "state" / "owned").reap()  # a failed test leaves nothing


def _docker_args(tmp: Path, engine: DockerEngine, image: str) -> list[str]:
    return ["--launcher", "docker", "--sim-image", image,
            "--pools", str(pools_file(tmp, engine.url)), "--recipe", SEED,
            "--artifacts-dir", str(tmp / "artifacts"), *SLOW]  # fmt: skip


@pytest.mark.docker
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_docker_sweep_signalled_mid_point_leaves_no_container(
    signum: signal.Signals,
    docker_engine: DockerEngine,
    sim_image: str,
    fault_root: Path,
    tmp_path: Path,
) -> None:
    env = {**_env(tmp_path, fault_root), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    artifacts, client = tmp_path / "artifacts", docker_engine.client

    def ours() -> list[str]:
        return [c.name for c in labelled_containers(client, LABEL_RUN)]

    sweep = Sweep(_docker_args(tmp_path, docker_engine, sim_image), env)
    try:
        # Mid-point, as for the simulator: a request running in the container.
        sweep.wait_until(
            lambda: recorded(artifacts) >= 1 and container_in_flight(client, LABEL_RUN), "point"
        )
        code, output = sweep.signal(signum)
        if signum == signal.SIGTERM:
            assert code == 130, output
            assert len(list(artifacts.glob("runs/*.json"))) == 1
        else:
            assert code == -signal.SIGKILL
            assert ours()  # a container outlives a killed sweep until the next one starts
            code, output = Sweep(_docker_args(tmp_path, docker_engine, sim_image), env).finish()
            assert code == 0, output
            assert "reused" in output.rstrip().splitlines()[-1]
        assert ours() == []
        assert_points_intact(artifacts)
    finally:
        sweep.stop()
        for container in labelled_containers(client, LABEL_RUN):
            client.api.remove_container(container.id, force=True)


@pytest.mark.timeout(3 * REAL_ENGINE_DEADLINE_S)
def test_local_real_engine_outlives_no_sweep(
    cpu_host: CpuHost, fault_root: Path, tmp_path: Path
) -> None:
    """SIGKILL mid-point, then the next sweep stops the engine it left; SIGTERM of that one
    stops its own engine and records the run. One real vLLM at a time (about a minute)."""
    env, artifacts = _env(tmp_path, fault_root), tmp_path / "artifacts"
    args = ["--launcher", "local", "--host-file", str(cpu_host.path), "--recipe", TINY_RECIPE,
            "--artifacts-dir", str(artifacts), "--num-prompts", "16"]  # fmt: skip
    killed = Sweep(args, env, REAL_ENGINE_DEADLINE_S)
    following: Sweep | None = None
    try:
        killed.wait_until(lambda: recorded(artifacts) >= 1 and bool(_owned(tmp_path)), "point")
        engines = _owned(tmp_path)
        assert killed.signal(signal.SIGKILL)[0] == -signal.SIGKILL
        assert_points_intact(artifacts)
        following = Sweep(args, env, REAL_ENGINE_DEADLINE_S)
        following.wait_until(lambda: all(group_members(g) == [] for g in engines), "reap")
        following.wait_until(lambda: bool(set(_owned(tmp_path)) - set(engines)), "engine")
        mine = _owned(tmp_path)
        code, output = following.signal(signal.SIGTERM)
        assert code == 130, output
        assert all(group_members(pgid) == [] for pgid in mine)
        assert _owned(tmp_path) == []
        assert len(list(artifacts.glob("runs/*.json"))) == 1  # the SIGTERMed run's record
    finally:
        for sweep in (killed, following):
            if sweep is not None:
                sweep.stop()
        ProcessLedger(tmp_path / "state" / "owned").reap()
