"""Multinode jobs as one Slurm job: each worker's nodes, role and argv, and `inferx matrix`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.multinode import describe, layout
from inferx_pipeline.golden import load_golden
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.schema import Recipe
from tests.matrix.conftest import recipe_doc
from tests.paths import ROOT

CATALOG = cached_catalog(ROOT / "catalog")
DISAGG_ROW = {"prefill": {"num-worker": 2, "tp": 4}, "decode": {"num-worker": 1, "tp": 8},
              "conc-list": [64]}  # fmt: skip
AGGREGATED_ROW = {"prefill": {"num-worker": 2, "tp": 8, "ep": 8},
                  "decode": {"num-worker": 0, "tp": 8}, "conc-list": [32]}  # fmt: skip


def _doc(*rows: dict[str, Any]) -> dict[str, Any]:
    scenarios = {"fixed-seq-len": [{"isl": 8192, "osl": 1024, "search-space": list(rows)}]}
    return recipe_doc(multinode=True, disagg=True, sku="gb200", scenarios=scenarios)


def _job(row: dict[str, Any]) -> BenchmarkJob:
    recipe = Recipe.model_validate(_doc(row))
    golden = load_golden(ROOT / "golden_al_distribution")
    (job,) = expand([recipe], golden=golden, catalog=CATALOG)
    return job


def test_disaggregated_workers_take_whole_nodes_prefill_first() -> None:
    job = _job(DISAGG_ROW)
    plan = layout(job, CATALOG.sku("gb200"))  # 4 GPUs per node
    assert plan.nodes == 4
    assert [(w.role, w.index, w.nodes, w.gpus) for w in plan.workers] == [
        ("prefill", 0, (0,), 4), ("prefill", 1, (1,), 4), ("decode", 0, (2, 3), 8),
    ]  # fmt: skip
    assert plan.workers[0].argv[:2] == ("vllm", "serve")
    assert "--tensor-parallel-size" in plan.workers[2].argv
    assert plan.workers[2].argv[plan.workers[2].argv.index("--tensor-parallel-size") + 1] == "8"


def test_an_aggregated_row_is_replicas_of_one_pool() -> None:
    job = _job(AGGREGATED_ROW)
    lines = describe(layout(job, CATALOG.sku("gb200")))
    assert lines[0] == "slurm job: 4 nodes x 4 GPUs"
    assert lines[1].startswith("  aggregated[0] node0,node1 8 GPUs: vllm serve ")
    assert lines[2].startswith("  aggregated[1] node2,node3 8 GPUs: vllm serve ")


def test_inferx_matrix_prints_the_layout(tmp_path: Path) -> None:
    path = tmp_path / "disagg.yaml"
    path.write_text(yaml.safe_dump(_doc(DISAGG_ROW)))
    result = CliRunner().invoke(cli, ["matrix", str(path)])
    assert result.exit_code == 0, result.output
    assert "    slurm job: 4 nodes x 4 GPUs" in result.output.splitlines()
    assert "    decode[0] node2,node3 8 GPUs: vllm serve" in result.output
