"""The ``docker`` runtime on the private cluster: jobs ``docker run`` the simulator image.

One dockerd (the tests' private engine) serves both nodes through its unix socket, which
no network namespace confines; its containers' host network is the root namespace's, so
the pool says where the client on the submit host reaches them (``docker.daemon_address``,
the controller's bridge address). AMD devices are fake character devices (``/dev/null``'s
numbers) handed to every container by the pool, and Slurm's ``ROCR_VISIBLE_DEVICES``
reaches the engine as ``HIP_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.launch.docker import ContainerSummary, labelled_containers
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.launch.slurm_script import LABEL_SLURM_JOB
from tests.defs.conftest import Project
from tests.launch.specs import sim_spec
from tests.services.docker_engine import DockerEngine
from tests.services.slurm_cluster import SUBNET, Cluster
from tests.slurm.conftest import (
    assert_job_id_on_every_point,
    assert_queue_drains,
    cluster_pool,
    slurm_env,
    submitted_job_ids,
    write_pools,
)
from tests.sweep.test_cli_sweep_docker import EnvWatch
from tests.sweep.test_docker_sweep import MEMLOCK

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

MI325X = "qwen3.827b-bf16-mi325x-vllm-mtp"  # AMD-style pool
FAST = ["--num-prompts", "1", "--time-scale", "0.02", "--load-time-s", "0", "--max-turns", "1"]
GONE_DEADLINE_S = 30.0
WATCH_DEADLINE_S = 120.0  # the first container starts after sbatch and the image's start


def _fake_amd_devices(root: Path) -> list[str]:
    """``/dev/kfd`` and a ``/dev/dri`` render node as harmless character devices (1:3)."""
    (root / "dri").mkdir(parents=True)
    for path in (root / "kfd", root / "dri" / "renderD128"):
        os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))  # S_IFCHR, like /dev/null
    return [f"{root / 'kfd'}:/dev/kfd", f"{root / 'dri'}:/dev/dri"]


def _docker_pool(engine: DockerEngine, tmp_path: Path) -> dict[str, object]:
    """Pool fields: runtime docker on the private engine, one GPU per job, fake AMD devices."""
    return {
        "skus": ("mi325x",),
        "runtime": "docker",
        "gres_per_node": "gpu:1",
        "docker": {
            "host": engine.url,
            "daemon_address": f"{SUBNET}.1",
            "devices": _fake_amd_devices(tmp_path / "dev"),
            "shm_size": "256m",
            "memlock_bytes": MEMLOCK,
        },
    }


def _job_containers(engine: DockerEngine) -> list[ContainerSummary]:
    return labelled_containers(engine.client, LABEL_SLURM_JOB)


def _assert_containers_gone(engine: DockerEngine) -> None:
    deadline = time.monotonic() + GONE_DEADLINE_S
    while (left := _job_containers(engine)) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling the daemon, bounded by the deadline
    assert left == [], f"containers left: {left}"


def test_sweep_on_a_docker_pool_measures_ingests_and_leaves_nothing(
    project: Project,
    slurm_cluster: Cluster,
    docker_engine: DockerEngine,
    sim_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    pools = write_pools(tmp_path / "slurm-pools.yaml", **_docker_pool(docker_engine, tmp_path))
    watch = EnvWatch(docker_engine, WATCH_DEADLINE_S)
    watch.start()
    args = ["sweep", "--recipe", MI325X, "--launcher", "slurm", "--pools", str(pools)]
    result = CliRunner().invoke(cli, [*args, "--sim-image", sim_image, *FAST])
    watch.join(WATCH_DEADLINE_S)
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("8 jobs: 8 ok")
    assert "HIP_VISIBLE_DEVICES=0" in watch.env  # Slurm's ROCR_VISIBLE_DEVICES
    assert set(watch.devices) == {f"{tmp_path}/dev/kfd:/dev/kfd", f"{tmp_path}/dev/dri:/dev/dri"}
    submitted = submitted_job_ids(project.settings)
    assert len(submitted) == 1  # one allocation for the server group
    assert_job_id_on_every_point(project.settings, submitted, points=8)
    assert_queue_drains(slurm_cluster)
    _assert_containers_gone(docker_engine)


def test_materialize_on_a_docker_pool_succeeds_and_leaves_nothing(
    project: Project,
    slurm_cluster: Cluster,
    docker_engine: DockerEngine,
    sim_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    pools = write_pools(tmp_path / "slurm-pools.yaml", **_docker_pool(docker_engine, tmp_path))
    args = ["materialize", "--recipe", MI325X, "--launcher", "slurm", "--pools", str(pools)]
    result = CliRunner().invoke(cli, [*args, "--sim-image", sim_image, *FAST])
    assert result.exit_code == 0, result.output
    assert "SUCCESS" in result.output and "8 ok" in result.output
    assert len(submitted_job_ids(project.settings)) == 1
    assert_queue_drains(slurm_cluster)
    _assert_containers_gone(docker_engine)


def test_scancel_from_outside_removes_the_jobs_container(
    slurm_cluster: Cluster, docker_engine: DockerEngine, sim_image: str, tmp_path: Path
) -> None:
    pool = cluster_pool(**_docker_pool(docker_engine, tmp_path))
    launcher = SlurmLauncher(
        pool, log_dir=tmp_path / "logs", run_id="t-run", environ=slurm_env(slurm_cluster)
    )
    spec = sim_spec("--load-time-s", "0", program=("python", "-m", "inferx_pipeline"))
    with launcher.start(spec.model_copy(update={"image": sim_image})) as server:
        server.wait_healthy()
        (container,) = _job_containers(docker_engine)
        assert container.labels[LABEL_SLURM_JOB] == str(server.job_id)
        slurm_cluster.run("scancel", str(server.job_id))
        _assert_containers_gone(docker_engine)  # the job's own trap, not our stop()
    assert_queue_drains(slurm_cluster)
