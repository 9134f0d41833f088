"""The real vLLM (CPU) under Slurm: the tiny recipe through `inferx sweep --launcher slurm`.

The engine's real argv runs on a node (runtime ``none``, the pool's ``programs`` naming the
cached vLLM venv), the model comes from the pool's model store, and the client measures
with the model's own tokenizer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.cli import cli
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from tests.services.slurm_cluster import Cluster
from tests.services.vllm import TINY_RECIPE, CpuHost
from tests.slurm.conftest import assert_queue_drains, write_pools
from tests.smoke import smoke_root

pytestmark = [pytest.mark.slurm, pytest.mark.vllm]


def test_the_cpu_recipe_runs_its_real_engine_on_a_node(
    cpu_host: CpuHost, slurm_cluster: Cluster, tmp_path: Path
) -> None:
    root = smoke_root(tmp_path / "root", [f"tiny/{TINY_RECIPE}.yaml"], saturation=True)
    vllm = cpu_host.host.programs["vllm"].path
    pools = write_pools(
        tmp_path / "pools.yaml",
        programs={"vllm": str(vllm)},
        model_store=cpu_host.host.models.model_dump(mode="json"),
    )
    env = {
        **slurm_cluster.env,
        "INFERX_ROOT": str(root),
        "INFERX_STATE_DIR": str(tmp_path / "state"),
    }
    art = tmp_path / "art"
    args = ["sweep", "--launcher", "slurm", "--pools", str(pools), "--artifacts-dir", str(art),
            "--num-prompts", "4"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env={**env, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("2 jobs: 2 ok"), result.output
    store = ArtifactStore(art)
    raws = [
        RawResult.model_validate_json(store.read(m.artifacts[RESULT])) for m in store.all_attempts()
    ]
    assert {raw.metadata["engine_version"] for raw in raws} == {"0.32.0"}
    assert {raw.metadata["simulated"] for raw in raws} == {False}
    assert len({raw.metadata["slurm_job_id"] for raw in raws}) == 1
    assert all(raw.tokenizer_id == str(cpu_host.model_dir / "tokenizer.json") for raw in raws)
    assert_queue_drains(slurm_cluster)
