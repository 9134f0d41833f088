"""The slurm launcher on the private cluster: a job per server, gres, replicas per node, the
queue's clock apart from the engine's, and the jobs of dead owners (this user's only)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.errors import LaunchError, ServerStartTimeoutError
from inferx_pipeline.launch.ownership import Owner, Reaped
from inferx_pipeline.launch.slurm import SlurmLauncher, owner_comment
from inferx_pipeline.launch.slurm_cli import SlurmCli, SlurmJob
from inferx_pipeline.launch.spec import GpuRequest, ServerSpec
from tests.launch.owners import dead_owner
from tests.launch.specs import sim_spec
from tests.services.slurm_cluster import Cluster
from tests.slurm.conftest import assert_queue_drains, cluster_pool, slurm_env

pytestmark = pytest.mark.slurm

GENERATED = "vllm:generation_tokens_total"
DEADLINE_S = 30.0
# The engine's start budget in the queue test; the nodes stay busy longer than that.
STARTUP_S = 8.0
BUSY_S = STARTUP_S + 4


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


def _wait_state(cluster: Cluster, job: str, state: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (found := cluster.run("squeue", "-h", "-j", job, "-o", "%T").strip()) != state:
        assert time.monotonic() < deadline, f"job {job} is {found!r}, not {state}"
        time.sleep(0.1)  # polling squeue, bounded by the deadline


def test_a_job_queued_longer_than_the_start_timeout_still_gets_its_full_start_budget(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    # Another job holds both nodes for longer than the engine may take to start.
    blocker = slurm_cluster.run(
        "sbatch", "--parsable", "--nodes=2", "--exclusive", "--output=/dev/null",
        "--wrap", f"sleep {BUSY_S:g}",
    ).strip()  # fmt: skip
    _wait_state(slurm_cluster, blocker, "RUNNING")
    launcher = _launcher(slurm_cluster, tmp_path)
    with launcher.start(_spec(startup_timeout_s=STARTUP_S)) as server:
        server.wait_healthy()
    assert_queue_drains(slurm_cluster)


def test_a_job_held_past_the_pools_queue_timeout_is_cancelled_naming_the_queue(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    launcher = _launcher(slurm_cluster, tmp_path, extra_args=("--hold",), queue_timeout_s=1)
    with pytest.raises(ServerStartTimeoutError) as info:
        launcher.start(_spec())
    assert "PENDING (JobHeldUser): still queued after 1 s; raise queue_timeout_s" in str(info.value)
    assert_queue_drains(slurm_cluster)


def test_jobs_of_dead_owners_are_cancelled_and_no_other_job_is_touched(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    dead = dead_owner("old")
    elsewhere = dead.model_copy(update={"host": "another-submit-host"})
    jobs = {
        "orphan": ([], owner_comment(dead)),
        "live": ([], owner_comment(Owner.current("other-run"))),  # this process: alive
        "elsewhere": ([], owner_comment(elsewhere)),  # cannot be checked from here
        "host-and-pid-only": ([], f"inferx run=old host={dead.host} pid={dead.pid}"),
        "another-user": (["--uid=nobody", "--gid=nogroup"], owner_comment(dead)),
    }
    ids = {
        name: slurm_cluster.run(
            "sbatch", "--parsable", *user, f"--comment={comment}", "--output=/dev/null",
            "--wrap", "sleep 300",
        ).strip()
        for name, (user, comment) in jobs.items()
    }  # fmt: skip
    reaped = _launcher(slurm_cluster, tmp_path).cleanup_orphans()
    assert reaped == Reaped(kind="Slurm job", stopped=(ids["orphan"],))
    assert sorted(slurm_cluster.active_jobs()) == sorted(v for k, v in ids.items() if k != "orphan")
    slurm_cluster.run("scancel", *ids.values())
    assert_queue_drains(slurm_cluster)


class _RefusingCli(SlurmCli):
    """``squeue`` lists ``jobs``; ``scancel`` refuses the ids in ``refused``."""

    def __init__(self, jobs: list[SlurmJob], refused: set[int]) -> None:
        super().__init__({})
        self.jobs = jobs
        self.refused = refused
        self.cancelled: list[int] = []

    def active_jobs(self) -> list[SlurmJob]:
        return self.jobs

    def cancel(self, job_id: int) -> None:
        if job_id in self.refused:
            raise LaunchError(f"scancel {job_id}: Access/permission denied")
        self.cancelled.append(job_id)


def test_a_job_scancel_refuses_is_reported_and_the_others_are_still_cancelled(
    tmp_path: Path,
) -> None:
    comment = owner_comment(dead_owner("old"))
    jobs = [
        SlurmJob(job_id=job, name="inferx-x", job_state="RUNNING", comment=comment)
        for job in (11, 12, 13)
    ]
    cli = _RefusingCli(jobs, refused={12})
    launcher = SlurmLauncher(cluster_pool(), log_dir=tmp_path, run_id="new", cli=cli)
    reaped = launcher.cleanup_orphans()
    assert cli.cancelled == [11, 13]
    assert reaped.stopped == ("11", "13")
    assert reaped.failed == {"12": "scancel 12: Access/permission denied"}
