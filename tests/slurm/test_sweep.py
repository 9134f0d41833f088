"""Seed recipes through `inferx sweep --launcher slurm` and `inferx materialize` on the cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.defs.execute import local_instance
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from tests.defs.conftest import Project
from tests.defs.test_assets import _cell_metadata
from tests.services.slurm_cluster import Cluster
from tests.slurm.conftest import (
    assert_job_id_on_every_point,
    assert_queue_drains,
    submitted_job_ids,
    write_pools,
)

pytestmark = pytest.mark.slurm

H200 = "qwen3.827b-fp8-h200-vllm-mtp"  # NVIDIA-style pool
MI325X = "qwen3.827b-bf16-mi325x-vllm-mtp"  # AMD-style pool
FAST = ["--num-prompts", "1", "--time-scale", "0.02", "--load-time-s", "0", "--max-turns", "1"]


@pytest.fixture
def pools(
    project: Project, slurm_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A Slurm pools file for every SKU, and the cluster's SLURM_CONF in the environment."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return write_pools(tmp_path / "slurm-pools.yaml")


def _slurm_args(pools: Path) -> list[str]:
    return ["--launcher", "slurm", "--pools", str(pools), "--sim-image", "inferx-sim", *FAST]


def test_each_server_group_is_one_allocation_and_each_point_has_its_job_id(
    project: Project, pools: Path, slurm_cluster: Cluster
) -> None:
    args = ["sweep", "--recipe", H200, "--recipe", MI325X, *_slurm_args(pools)]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("16 jobs: 16 ok")
    store = ArtifactStore(project.settings.artifacts_dir)
    results = [
        RawResult.model_validate_json(store.read(m.artifacts[RESULT])) for m in store.all_attempts()
    ]
    jobs_by_recipe: dict[object, set[object]] = {}
    for raw in results:
        jobs_by_recipe.setdefault(raw.metadata["recipe_id"], set()).add(
            raw.metadata["slurm_job_id"]
        )
    assert len(results) == 16
    assert all(len(ids) == 1 for ids in jobs_by_recipe.values()), jobs_by_recipe
    assert len(set.union(*jobs_by_recipe.values())) == 2  # one job per server group
    assert_queue_drains(slurm_cluster)
    submitted = submitted_job_ids(project.settings)
    assert set.union(*jobs_by_recipe.values()) == submitted
    assert {f"inferx-test:{job}" for job in submitted} <= set(result.output.split())
    assert_job_id_on_every_point(project.settings, submitted, points=16)


def test_materialize_runs_on_slurm_and_dagster_pools_come_from_slurm_pools(
    project: Project, pools: Path, slurm_cluster: Cluster
) -> None:
    result = CliRunner().invoke(cli, ["materialize", "--recipe", H200, *_slurm_args(pools)])
    assert result.exit_code == 0, result.output
    assert "SUCCESS" in result.output and "8 ok" in result.output
    assert result.output.splitlines()[-1] == str(project.settings.site_dir / "index.html")
    cells, _ = project.cells(H200)
    shown = _cell_metadata(local_instance(project.settings.dagster_home), cells[0])
    assert str(shown["slurm_job"].value).startswith("inferx-test:")  # cluster:job of the cell
    assert_queue_drains(slurm_cluster)
    limits = CliRunner().invoke(cli, ["dagster", "pools", "--pools", str(pools)])
    assert limits.exit_code == 0, limits.output
    assert "gpu-h200: 2" in limits.output.splitlines()
