"""Multinode deployments on the private two-node cluster: workers per node, a real router,
KV transfer proven from the workers' counters, a worker spanning both nodes, a worker death."""

from __future__ import annotations

import json
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.multinode import job_spec
from inferx_pipeline.engines.sim import SimAdapter
from inferx_pipeline.errors import ServerExitedError
from inferx_pipeline.golden import load_golden
from inferx_pipeline.launch.base import ServerHandle
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.launch.slurm_deploy import DeploymentHandle
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import ROOT
from tests.services.slurm_cluster import Cluster
from tests.slurm.conftest import (
    FAST_SIM,
    assert_queue_drains,
    cluster_pool,
    slurm_env,
    write_pools,
)
from tests.smoke import smoke_root

pytestmark = pytest.mark.slurm

CATALOG = cached_catalog(ROOT / "catalog")
DISAGG = ROOT / "recipes/multinode/disagg-tiny-qwen3-bf16-cpu-vllm.yaml"
DEADLINE_S = 30.0
COMPUTED = "inferx_sim:prefill_computed_tokens_total"
RECEIVED = "inferx_sim:kv_transfer_received_tokens_total"
PROMPT = 256


def _job(**over: Any) -> BenchmarkJob:
    doc = {**yaml.safe_load(DISAGG.read_text()), **over}
    jobs = expand([Recipe.model_validate(doc)], golden=load_golden(ROOT / "golden_al_distribution"),
                  catalog=CATALOG)  # fmt: skip
    return max(jobs, key=lambda job: job.conc)


def _spec(job: BenchmarkJob) -> ServerSpec:
    return job_spec(job, CATALOG.sku(job.sku), SimAdapter(FAST_SIM))


def _launcher(cluster: Cluster, tmp_path: Path) -> SlurmLauncher:
    return SlurmLauncher(
        cluster_pool(), log_dir=tmp_path / "logs", run_id="t-run", environ=slurm_env(cluster),
        poll_s=0.2,
    )  # fmt: skip


def _measure(server: ServerHandle, prompts: int = 4) -> None:
    config = BenchConfig(
        endpoint=server.base_url, model=server.spec.client.model_name, api="completions",
        dataset=RandomSpec(input_len=PROMPT, output_len=8), concurrency=2, num_prompts=prompts,
    )  # fmt: skip
    result = benchmark(config)
    assert result.completed == prompts and result.failed == 0


def _counter(url: str, name: str) -> float:
    return scrape(url).get(name) or 0.0


def test_prefill_and_decode_run_on_their_own_nodes_behind_the_router_and_kv_moves_between(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    spec = _spec(_job())
    with _launcher(slurm_cluster, tmp_path).start(spec) as server:
        assert isinstance(server, DeploymentHandle)
        server.wait_healthy()
        prefill, decode = server.endpoints
        assert {prefill.split(":")[1], decode.split(":")[1]} == {"//10.200.0.11", "//10.200.0.12"}
        assert server.base_url.startswith("http://127.0.0.1:")  # vllm-router, on this host
        assert slurm_cluster.active_jobs() == [str(server.job_id)]  # one allocation
        _measure(server)
        # The decode worker computed no prompt token itself: every one came from prefill.
        assert _counter(decode, COMPUTED) == 0
        assert _counter(decode, RECEIVED) >= 4 * PROMPT
        assert _counter(prefill, COMPUTED) >= 4 * PROMPT
        assert server.provenance["router_ran"].startswith("vllm-router ")
        assert "decode[0]=http://10.200.0.1" in server.provenance["workers"]
    assert_queue_drains(slurm_cluster)


def test_sglang_router_drives_the_bootstrap_handshake(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    engine = {"framework": "sglang-disagg", "image": "lmsysorg/sglang:v0.5.9-cpu"}
    router = {"name": "sglang-router", "version": "0.3.2"}
    job = _job(engine=engine, router=router, **{"kv-p2p-transfer": "nixl"})
    spec = _spec(job)
    assert spec.deployment is not None and spec.deployment.router.mode == "pd-sglang"
    with _launcher(slurm_cluster, tmp_path).start(spec) as server:
        server.wait_healthy()
        _measure(server)
        decode = server.endpoints[1]
        assert _counter(decode, COMPUTED) == 0 and _counter(decode, RECEIVED) >= 4 * PROMPT
    assert_queue_drains(slurm_cluster)


def test_a_worker_whose_tp_spans_both_nodes_starts_and_serves(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    row = {
        "conc-list": [2],
        "prefill": {"num-worker": 1, "tp": 2},
        "decode": {"num-worker": 0, "tp": 2},
    }
    scenarios = {"fixed-seq-len": [{"isl": 128, "osl": 32, "search-space": [row]}]}
    job = _job(disagg=False, scenarios=scenarios)
    spec = _spec(job)
    assert spec.deployment is not None
    (worker,) = spec.deployment.workers
    assert worker.nodes == (0, 1) and "--nnodes" in worker.argv  # cpu: one "GPU" per node
    with _launcher(slurm_cluster, tmp_path).start(spec) as server:
        server.wait_healthy()
        _measure(server, prompts=2)
        # Rank 0 answers health only once rank 1, on the other node, joined it.
        with urllib.request.urlopen(server.endpoints[0] + "/server_info", timeout=5) as answer:
            info = json.load(answer)
        assert (info["nnodes"], info["node_rank"]) == (2, 0)
    assert_queue_drains(slurm_cluster)


def test_killing_the_decode_worker_mid_point_names_it_and_ends_the_job(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    spec = _spec(_job())
    with _launcher(slurm_cluster, tmp_path).start(spec) as server:
        server.wait_healthy()
        _measure(server, prompts=1)
        port = server.endpoints[1].rsplit(":", 1)[1]
        (decode,) = [
            p for p in psutil.process_iter(["cmdline"])
            if "decode" in (p.info["cmdline"] or []) and port in (p.info["cmdline"] or [])
        ]  # fmt: skip
        decode.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + DEADLINE_S
        while (status := server.exit_status()) is None and time.monotonic() < deadline:
            time.sleep(0.2)  # polling the job's state, bounded by the deadline
        assert status is not None
        error = server.exited_error(status)
        assert isinstance(error, ServerExitedError)
        assert "decode[0] worker on node" in str(error) and "status 137" in str(error)
    assert_queue_drains(slurm_cluster)


# Recipe -> the thinking mode InferenceX leaves to its launch scripts (our checks want it).
IMPORTED = {
    "qwen3.5-fp8-mi355x-sglang-disagg": "off",  # sglang-router: SGLang's bootstrap handshake
    "dsr1-fp8-h100-dynamo-trt": None,  # sglang-router, standing in for Dynamo's frontend
    "dsv4-fp4-b200-dynamo-vllm-mtp": "off",  # vllm-router: vLLM's kv_transfer_params
}


def test_imported_inferencex_multinode_rows_run_end_to_end_on_the_simulator(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    imported = tmp_path / "imported"
    masters = [
        str(ROOT / f"third_party/inferencex/configs/{v}-master.yaml") for v in ("amd", "nvidia")
    ]
    result = CliRunner().invoke(cli, ["import-inferencex", *masters, "--out", str(imported)])
    assert result.exit_code == 0, result.output
    root = smoke_root(tmp_path / "root", [])
    for recipe, thinking in IMPORTED.items():
        doc = yaml.safe_load((imported / f"{recipe}.yaml").read_text())
        if thinking is not None:
            doc["model"]["thinking"] = thinking
        (root / "recipes" / f"{recipe}.yaml").write_text(yaml.safe_dump(doc))
    pools = write_pools(tmp_path / "pools.yaml")
    state = tmp_path / "state"
    env = {**slurm_cluster.env, "INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(state)}
    args = ["sweep", *(f"--recipe={r}" for r in IMPORTED), "--conc", "1,6,8",
            "--launcher", "slurm", "--pools", str(pools), "--sim-image", "inferx-sim",
            "--num-prompts", "1", "--time-scale", "0.001", "--load-time-s", "0",
            "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # progress went to stderr
    statuses = {(job["recipe_id"], job["status"]) for job in report["jobs"]}
    assert statuses == {(recipe, "ok") for recipe in IMPORTED}, report
    assert_queue_drains(slurm_cluster)
