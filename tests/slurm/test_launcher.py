"""The slurm launcher on the private cluster: a job per server, gres, replicas per node, orphans."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.launch.slurm import SlurmLauncher, owner_comment
from inferx_pipeline.launch.spec import GpuRequest, ServerSpec
from tests.launch.specs import sim_spec
from tests.services.slurm_cluster import Cluster
from tests.slurm.conftest import assert_queue_drains, cluster_pool, slurm_env

pytestmark = pytest.mark.slurm

GENERATED = "vllm:generation_tokens_total"


def _launcher(cluster: Cluster, tmp_path: Path, **pool: object) -> SlurmLauncher:
    return SlurmLauncher(
        cluster_pool(**pool),
        log_dir=tmp_path / "logs",
        run_id="t-run",
        environ=slurm_env(cluster),
        poll_s=0.2,
    )


def _spec(**overrides: Any) -> ServerSpec:
    return sim_spec(
        "--load-time-s",
        "0",
        "--served-model-name",
        "sim",
        program=("python", "-m", "inferx_pipeline"),
        **overrides,
    )


def test_a_server_runs_in_its_own_job_with_slurm_gpus_and_is_cancelled_on_stop(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    launcher = _launcher(slurm_cluster, tmp_path)
    spec = _spec(gpus=GpuRequest(vendor="nvidia", count=1))
    with launcher.start(spec) as server:
        server.wait_healthy()
        assert slurm_cluster.active_jobs() == [str(server.job_id)]
        assert server.base_url.startswith("http://10.200.0.1")
        assert server.provenance["slurm_job_id"] == str(server.job_id)
        log = "\n".join(server.logs())
        assert "INFERX_SLURM_REPLICA rank=0" in log and "gpus=0" in log  # from Slurm's gres
    assert_queue_drains(slurm_cluster)
    assert "INFERX_SIM_LISTENING" in server.log_path.read_text()


def test_two_replicas_one_per_node_are_measured_across_both(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    launcher = _launcher(slurm_cluster, tmp_path, replicas=2)
    with launcher.start(_spec()) as server:
        server.wait_healthy()
        assert server.base_url.startswith("http://127.0.0.1:")  # the round-robin proxy
        assert {url.split(":")[1] for url in server.endpoints} == {"//10.200.0.11", "//10.200.0.12"}
        config = BenchConfig(
            endpoint=server.base_url,
            model=server.spec.client.model_name,
            api="completions",
            dataset=RandomSpec(input_len=32, output_len=8),
            concurrency=4,
            num_prompts=8,
        )
        result = benchmark(config)
        assert result.completed == 8 and result.failed == 0
        per_replica = [scrape(url).get(GENERATED) for url in server.endpoints]
        assert all(tokens and tokens > 0 for tokens in per_replica), per_replica
        assert scrape(server.base_url).get(GENERATED) == sum(t or 0 for t in per_replica)
    assert_queue_drains(slurm_cluster)


def test_a_request_no_node_can_hold_fails_at_submit(slurm_cluster: Cluster, tmp_path: Path) -> None:
    launcher = _launcher(slurm_cluster, tmp_path)
    with pytest.raises(LaunchError, match="Requested node configuration is not available"):
        launcher.start(_spec(gpus=GpuRequest(vendor="nvidia", count=3)))
    assert slurm_cluster.active_jobs() == []


def test_orphans_of_dead_launchers_on_this_host_are_cancelled(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    comments = {
        "orphan": f"inferx run=old host={host} pid={dead.pid}",
        "live": owner_comment("other-run"),  # this process: alive
        "elsewhere": f"inferx run=old host=not-{host} pid={dead.pid}",
    }
    ids = {
        name: slurm_cluster.run(
            "sbatch", "--parsable", f"--comment={comment}", f"--output={tmp_path}/%j.out",
            "--wrap", "sleep 300",
        ).strip()
        for name, comment in comments.items()
    }  # fmt: skip
    assert _launcher(slurm_cluster, tmp_path).cleanup_orphans() == [int(ids["orphan"])]
    slurm_cluster.run("scancel", ids["live"], ids["elsewhere"])
    assert_queue_drains(slurm_cluster)
