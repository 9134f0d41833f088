"""Slurm pools as data, Slurm end states as statuses, and the replica proxy's metrics (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.errors import AllocationEndedError, CatalogError, LaunchError
from inferx_pipeline.launch.pools import RunnerPools
from inferx_pipeline.launch.slurm_cli import SlurmJob
from inferx_pipeline.launch.slurm_pools import SlurmPools, load_runner_pools
from inferx_pipeline.launch.slurm_proxy import merge_metrics
from inferx_pipeline.sweep.retries import load_retry_policy
from inferx_pipeline.sweep.status import failure_from_error
from tests.paths import ROOT
from tests.slurm.conftest import write_pools

EXAMPLE = ROOT / "deploy" / "slurm-pools.example.yaml"


def test_a_kind_slurm_file_is_read_as_slurm_pools_and_others_as_docker(tmp_path: Path) -> None:
    slurm = load_runner_pools(write_pools(tmp_path / "slurm.yaml", skus=("h200",)), {})
    assert isinstance(slurm, SlurmPools) and slurm.pool_for("h200")[0] == "test"
    assert isinstance(load_runner_pools(None, {}), RunnerPools)
    with pytest.raises(LaunchError, match="no Slurm pool serves SKU 'mi355x'; it has pools test"):
        slurm.pool_for("mi355x")


def test_the_example_pools_file_is_valid() -> None:
    pools = load_runner_pools(EXAMPLE, {})
    assert isinstance(pools, SlurmPools)
    assert {pool.runtime for pool in pools.pools.values()} == {"pyxis", "docker"}


def test_a_malformed_pools_file_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: slurm\nsource: t\npools: {a: {skus: [h200], partition: p}}\n")
    with pytest.raises(
        CatalogError, match=r"(?s)bad.yaml: invalid Slurm pools.*pools.a.time_limit"
    ):
        load_runner_pools(path, {})


@pytest.mark.parametrize(
    ("state", "status"),
    [("TIMEOUT", "time-limit"), ("NODE_FAIL", "node-failed"), ("PREEMPTED", "preempted"),
     ("CANCELLED", "cancelled"), ("OUT_OF_MEMORY", "server-exited"), ("FAILED", "server-exited")],
)  # fmt: skip
def test_slurm_end_states_map_to_statuses(state: str, status: str) -> None:
    err = AllocationEndedError("ended", state=state, status=1, oom_killed=state == "OUT_OF_MEMORY")
    failure = failure_from_error(err, "measure")
    assert failure.status == status and failure.oom_killed == (state == "OUT_OF_MEMORY")


def test_node_failure_and_preemption_are_retried_but_the_time_limit_is_not() -> None:
    retried = load_retry_policy(ROOT / "catalog").retry_statuses
    assert {"node-failed", "preempted"} <= retried
    assert not {"time-limit", "cancelled"} & retried


def test_replica_metrics_sum_each_series() -> None:
    one = '# TYPE t counter\nt_total{m="a"} 2.0\nrunning 1\n'
    two = '# TYPE t counter\nt_total{m="a"} 3.0\nrunning 0\n'
    assert merge_metrics([one, two]) == '# TYPE t counter\nt_total{m="a"} 5.0\nrunning 1.0\n'


def test_squeue_json_jobs_parse_in_the_22_05_and_later_shapes() -> None:
    old = {"job_id": 7, "name": "inferx-x", "job_state": "NODE_FAIL", "exit_code": 0, "x": 1}
    new = {**old, "job_state": ["RUNNING", "COMPLETING"], "exit_code": {"return_code": 3}}
    assert (SlurmJob.model_validate(old).job_state, SlurmJob.model_validate(old).active) == (
        "NODE_FAIL",
        False,
    )
    parsed = SlurmJob.model_validate(new)
    assert (parsed.job_state, parsed.exit_code, parsed.active) == ("RUNNING", 3, True)
