"""The real vLLM (CPU) disaggregated on the private cluster: a prefill and a decode worker on
two nodes behind vllm-router, the KV moving through vLLM's shared-storage connector.

The transfer is proven from the decode engine's own counters
(``vllm:prompt_tokens_by_source_total``): its prompt tokens came from the connector
(``external_kv_transfer``), and it computed two tokens of each. ExampleConnector moves the
whole 128-token blocks of a prompt's first ``len - 1`` tokens and keys them by the token ids
``(len - 2) // 128`` blocks long (a prompt one token past a block boundary misses: the two
disagree), so prompts of 3 blocks + 2 tokens move 3 blocks and compute 2 tokens.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.multinode import job_spec
from inferx_pipeline.golden import load_golden
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.recipes.schema import Recipe
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import RESULT, ArtifactStore
from tests.paths import ROOT
from tests.services.slurm_cluster import Cluster
from tests.services.vllm import CpuHost
from tests.slurm.conftest import assert_queue_drains, cluster_pool, slurm_env, write_pools
from tests.smoke import smoke_root

pytestmark = [pytest.mark.slurm, pytest.mark.vllm]

RECIPE = "disagg-tiny-qwen3-bf16-cpu-vllm"
BLOCK = 128  # vLLM's KV block on CPU: ExampleConnector moves whole blocks
PROMPTS = 4
SOURCE = "vllm:prompt_tokens_by_source"


def _by_source(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        sample.labels["source"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == SOURCE
        for sample in family.samples
        if sample.name.endswith("_total")
    }


def _pools(cpu_host: CpuHost, path: Path) -> dict[str, object]:
    return {
        "programs": {"vllm": str(cpu_host.host.programs["vllm"].path)},
        "model_store": cpu_host.host.models.model_dump(mode="json"),
    }


def test_the_decode_worker_loads_the_prefill_workers_kv_instead_of_computing_it(
    cpu_host: CpuHost, slurm_cluster: Cluster, tmp_path: Path
) -> None:
    doc = yaml.safe_load((ROOT / "recipes/multinode" / f"{RECIPE}.yaml").read_text())
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    (job, *_) = expand([Recipe.model_validate(doc)], golden=golden, catalog=catalog)
    spec = job_spec(job, catalog.sku(job.sku))
    spec = spec.model_copy(
        update={
            "client": spec.client.model_copy(
                update={"tokenizer": cpu_host.model_dir / "tokenizer.json"}
            )
        }
    )
    launcher = SlurmLauncher(
        cluster_pool(**_pools(cpu_host, tmp_path)), log_dir=tmp_path / "logs", run_id="t-run",
        environ=slurm_env(slurm_cluster), poll_s=0.2,
    )  # fmt: skip
    with launcher.start(spec) as server:
        server.wait_healthy()
        prefill, decode = server.endpoints
        config = BenchConfig(
            endpoint=server.base_url, model=spec.client.model_name, api="completions",
            tokenizer=spec.client.tokenizer, concurrency=1, num_prompts=PROMPTS,
            dataset=RandomSpec(input_len=3 * BLOCK + 2, output_len=8),
        )  # fmt: skip
        result = benchmark(config)
        assert result.completed == PROMPTS and result.failed == 0, (
            result.errors,
            list((tmp_path / "logs").rglob("*")),
        )
        moved, computed = _by_source(decode), _by_source(prefill)
    assert moved.get("external_kv_transfer") == PROMPTS * 3 * BLOCK, moved
    assert moved.get("local_compute") == PROMPTS * 2, moved  # the tail of each prompt
    assert computed.get("external_kv_transfer", 0) == 0 and computed["local_compute"] > 0
    assert_queue_drains(slurm_cluster)


def test_the_disaggregated_recipe_materializes_and_is_drawn(
    cpu_host: CpuHost, slurm_cluster: Cluster, tmp_path: Path
) -> None:
    """Through Dagster (``inferx sweep`` of it runs in the README test)."""
    root = smoke_root(tmp_path / "root", [f"multinode/{RECIPE}.yaml"], saturation=True)
    pools = write_pools(tmp_path / "pools.yaml", **_pools(cpu_host, tmp_path))
    state = tmp_path / "state"
    env = {**slurm_cluster.env, "INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(state),
           "COLUMNS": "200"}  # fmt: skip
    args = ["materialize", "--recipe", RECIPE, "--launcher", "slurm", "--pools", str(pools),
            "--num-prompts", "2"]  # fmt: skip
    materialized = CliRunner().invoke(cli, args, env=env)
    assert materialized.exit_code == 0, materialized.output
    assert "SUCCESS" in materialized.output and "2 ok" in materialized.output
    results = ResultStore(f"sqlite:///{state / 'results.sqlite'}")
    try:
        rows = results.read_frame()
    finally:
        results.close()
    assert len(rows) == 2 and not rows["simulated"].any()
    assert set(rows["deployment"]) == {"disagg 1P tp1 + 1D tp1"}
    assert set(rows["gpus"]) == {2} and set(rows["router"]) == {"vllm-router"}
    assert set(rows["kv_transfer"]) == {"shared-storage"} and rows["disagg"].all()
    store = ArtifactStore(state / "artifacts")
    raws = [
        RawResult.model_validate_json(store.read(m.artifacts[RESULT])) for m in store.all_attempts()
    ]
    # Throughput per GPU divides by both workers' GPUs.
    assert sorted(rows["tput_per_gpu"]) == pytest.approx(
        sorted(r.total_token_throughput / 2 for r in raws)
    )
    model_pages = "".join(p.read_text() for p in (state / "site" / "models").glob("*.html"))
    assert '"disagg 1P tp1 + 1D tp1"' in model_pages  # the configuration's label
    assert_queue_drains(slurm_cluster)


def test_a_vllm_worker_whose_tp_spans_both_nodes_serves(
    cpu_host: CpuHost, slurm_cluster: Cluster, tmp_path: Path
) -> None:
    doc = yaml.safe_load((ROOT / "recipes/multinode" / f"{RECIPE}.yaml").read_text())
    row = {"conc-list": [1], "prefill": {"num-worker": 1, "tp": 2},
           "decode": {"num-worker": 0, "tp": 2}}  # fmt: skip
    doc |= {
        "disagg": False,
        "scenarios": {"fixed-seq-len": [{"isl": 128, "osl": 16, "search-space": [row]}]},
    }
    # Without VLLM_ENABLE_V1_MULTIPROCESSING=0: each rank runs its engine core process.
    doc["engine"]["env"] = {"VLLM_CPU_KVCACHE_SPACE": "1"}
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    (job,) = expand([Recipe.model_validate(doc)], golden=golden, catalog=catalog)
    spec = job_spec(job, catalog.sku(job.sku))
    assert spec.deployment is not None and spec.deployment.workers[0].nodes == (0, 1)
    tokenizer = cpu_host.model_dir / "tokenizer.json"
    spec = spec.model_copy(
        update={"client": spec.client.model_copy(update={"tokenizer": tokenizer})}
    )
    launcher = SlurmLauncher(
        cluster_pool(**_pools(cpu_host, tmp_path)), log_dir=tmp_path / "logs", run_id="t-run",
        environ=slurm_env(slurm_cluster), poll_s=0.2,
    )  # fmt: skip
    with launcher.start(spec) as server:
        server.wait_healthy()
        config = BenchConfig(
            endpoint=server.base_url, model=spec.client.model_name, api="completions",
            tokenizer=tokenizer, concurrency=1, num_prompts=2,
            dataset=RandomSpec(input_len=64, output_len=8),
        )  # fmt: skip
        result = benchmark(config)
        assert result.completed == 2 and result.failed == 0
        log = server.log_path.read_text()
    # Both ranks joined one torch.distributed group across the nodes.
    assert "[aggregated[0] r1]" in log and "world_size=2" in log
    assert_queue_drains(slurm_cluster)
