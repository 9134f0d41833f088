"""Multinode jobs as one Slurm job: each worker's nodes, role and argv, and `inferx matrix`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.multinode import describe, job_spec, layout
from inferx_pipeline.engines.sim import SimAdapter
from inferx_pipeline.golden import load_golden
from inferx_pipeline.launch.slurm_deploy import deployment_script
from inferx_pipeline.launch.slurm_pools import SlurmPool
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.settings import Settings
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
    spec = job_spec(job, CATALOG.sku("gb200"))
    assert spec.deployment is not None
    workers = spec.deployment.workers
    assert workers[0].argv[:2] == ("vllm", "serve")
    decode = workers[2].argv
    assert decode[decode.index("--tensor-parallel-size") + 1] == "8"
    # The decode worker spans two nodes: rank, node count and the first node as master.
    assert decode[decode.index("--nnodes") + 1] == "{nnodes}" and "{master}" in decode
    assert workers[2].follower_argv[-1] == "--headless"  # vLLM's ranks > 0 serve no API
    config = json.loads(decode[decode.index("--kv-transfer-config") + 1])
    assert config == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert spec.deployment.router.name == "vllm-router"
    assert spec.deployment.router.mode == "pd-vllm"


def test_a_dp_attention_worker_spans_its_expert_ranks() -> None:
    row = {"prefill": {"num-worker": 1, "tp": 1, "ep": 8, "dp-attn": True},
           "decode": {"num-worker": 1, "tp": 8}, "conc-list": [8]}  # fmt: skip
    job = _job(row)
    assert job.gpus == 16  # InferenceX's dep8 prefill (8 GPUs) + tp8 decode
    prefill = job_spec(job, CATALOG.sku("gb200")).deployment.workers[0]  # type: ignore[union-attr]
    assert prefill.nodes == (0, 1) and "--data-parallel-size" in prefill.argv


def test_an_aggregated_row_is_replicas_of_one_pool() -> None:
    job = _job(AGGREGATED_ROW)
    lines = describe(job, CATALOG.sku("gb200"))
    assert lines[0] == "slurm job: 4 nodes x 4 GPUs; router vllm-router 0.1.14 (regular)"
    assert lines[1].startswith("  aggregated[0] node0,node1 8 GPUs: vllm serve ")
    assert lines[2].startswith("  aggregated[1] node2,node3 8 GPUs: vllm serve ")


def test_what_cannot_launch_says_why_and_still_shows_its_nodes() -> None:
    recipe = Recipe.model_validate(
        {**_doc(DISAGG_ROW), "engine": {"framework": "dynamo-trt", "image": "nvcr.io/trt:1"}}
    )
    (job,) = expand([recipe], golden=load_golden(ROOT / "golden_al_distribution"), catalog=CATALOG)
    lines = describe(job, CATALOG.sku("gb200"))
    assert lines[1] == "  prefill[0] node0 4 GPUs"
    assert "multinode dynamo-trt is not launched by inferx" in lines[-1]
    assert "--sim" in lines[-1]
    simulated = job_spec(job, CATALOG.sku("gb200"), SimAdapter()).deployment
    assert simulated is not None and simulated.router.name == "sglang-router"


def test_every_imported_inferencex_multinode_row_has_a_simulated_deployment_and_script(
    tmp_path: Path,
) -> None:
    configs = ROOT / "third_party/inferencex/configs"
    masters = [str(configs / f"{vendor}-master.yaml") for vendor in ("amd", "nvidia")]
    result = CliRunner().invoke(cli, ["import-inferencex", *masters, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    request = MatrixRequest(paths=(tmp_path,), policy=False, allow_duplicates=True)
    jobs = [job for job in load_matrix(request, Settings()).jobs if job.workers is not None]
    assert len(jobs) > 300
    pool = SlurmPool.model_validate(
        {"skus": ["*"], "partition": "gpu", "time_limit": "5", "runtime": "none", "nodes": 2}
    )
    adapter = SimAdapter()
    for job in jobs:
        spec = job_spec(job, CATALOG.sku(job.sku), adapter)
        assert spec.deployment is not None, job.job_id
        script = deployment_script(spec, pool, run_id="r", shared=tmp_path, simulated=True)
        steps = [line.split() for line in script.splitlines() if line.startswith("srun ")]
        assert len(steps) == len(spec.deployment.workers), job.job_id
        for step in steps:  # every step fits the pool's two nodes
            start, count = (int(_option(step, name)) for name in ("--relative", "--nodes"))
            assert start + count <= pool.nodes, (job.job_id, step)
        gpus = sum(w.gpus for w in layout(job, CATALOG.sku(job.sku)).workers)
        assert gpus == job.gpus, job.job_id  # throughput per GPU counts every worker's


def _option(argv: list[str], name: str) -> str:
    (value,) = [arg.split("=", 1)[1] for arg in argv if arg.startswith(f"{name}=")]
    return value


def test_inferx_matrix_prints_the_layout(tmp_path: Path) -> None:
    path = tmp_path / "disagg.yaml"
    path.write_text(yaml.safe_dump(_doc(DISAGG_ROW)))
    result = CliRunner().invoke(cli, ["matrix", str(path)])
    assert result.exit_code == 0, result.output
    assert (
        "    slurm job: 4 nodes x 4 GPUs; router vllm-router 0.1.14 (pd-vllm); KV transfer nixl"
        in (result.output.splitlines())
    )
    assert "    decode[0] node2,node3 8 GPUs: vllm serve" in result.output
