"""Fixtures for the Slurm tests: pools on the private cluster, fast simulator settings."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.launch.slurm_pools import SlurmPool, SlurmPools
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run
from tests.defs.conftest import project  # noqa: F401  # the Dagster tests' project fixture
from tests.services.slurm_cluster import CLUSTER_NAME, Cluster

FAST_SIM = SimOptions(load_time_s=0, time_scale=0.001, startup_timeout_s=60)
DRAIN_DEADLINE_S = 30.0


def cluster_pool(**fields: object) -> SlurmPool:
    """A pool on the private cluster's partition: runtime none, this interpreter as python."""
    base: dict[str, object] = {
        "skus": ("*",),
        "partition": "gpu",
        "time_limit": "5",
        "runtime": "none",
        "programs": {"python": sys.executable},
        "nodes": 2,
    }
    return SlurmPool.model_validate({**base, **fields})


def write_pools(path: Path, **fields: object) -> Path:
    """A ``kind: slurm`` pools file with one pool ``test`` (``fields`` override it)."""
    pools = SlurmPools(
        kind="slurm", source="the tests' private cluster", pools={"test": cluster_pool(**fields)}
    )
    path.write_text(yaml.safe_dump(pools.model_dump(mode="json")))
    return path


def slurm_env(cluster: Cluster) -> dict[str, str]:
    """This process's environment plus what a Slurm client needs to reach the cluster."""
    return {**os.environ, **cluster.env}


def assert_queue_drains(cluster: Cluster, deadline_s: float = DRAIN_DEADLINE_S) -> None:
    """Poll until ``squeue`` lists no job; fail naming the jobs left at the deadline."""
    deadline = time.monotonic() + deadline_s
    while (jobs := cluster.active_jobs()) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling squeue, bounded by the deadline
    assert jobs == [], f"jobs left in the queue: {jobs}"


def submitted_job_ids(settings: Settings) -> set[str]:
    """The ids sbatch returned in a sweep, read from the names of the jobs' output files."""
    outputs = settings.state.glob("logs/*/*/slurm_job-*.out")
    return {path.name.removeprefix("slurm_job-").removesuffix(".out") for path in outputs}


def assert_job_id_on_every_point(settings: Settings, submitted: set[str], *, points: int) -> None:
    """Each attempt manifest, the run record and each ingested row name one of ``submitted``."""
    manifests = list(ArtifactStore(settings.artifacts_dir).all_attempts())
    assert len(manifests) == points
    assert {m.provenance["slurm_job_id"] for m in manifests} == submitted
    assert {m.provenance["slurm_cluster"] for m in manifests} == {CLUSTER_NAME}
    (run_id,) = {m.run_id for m in manifests}
    record = load_run(settings.artifacts_dir, run_id)
    assert record is not None
    assert {line.provenance["slurm_job_id"] for line in record.outcomes} == submitted
    published = CliRunner().invoke(cli, ["publish"])
    assert published.exit_code == 0, published.output
    rows = ResultStore(settings.results_url).read_frame()
    assert len(rows) == points
    assert set(rows["slurm_job_id"]) == submitted
    assert set(rows["slurm_cluster"]) == {CLUSTER_NAME}
