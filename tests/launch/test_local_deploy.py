"""A multinode deployment on one host: the simulator's workers as child processes behind the
real router, through the default launcher, and a worker that dies named by its role."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psutil
import yaml
from click.testing import CliRunner

from inferx_pipeline.bench.config import BenchConfig
from inferx_pipeline.bench.datasets import RandomSpec
from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.bench.runner import benchmark
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.engines.multinode import job_spec
from inferx_pipeline.engines.sim import SimAdapter, SimOptions
from inferx_pipeline.golden import load_golden
from inferx_pipeline.launch.local_deploy import LocalDeployment
from inferx_pipeline.launch.subprocess import SubprocessLauncher
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import ROOT
from tests.smoke import smoke_root

RECIPE = "disagg-tiny-qwen3-bf16-cpu-vllm"
FAST = SimOptions(load_time_s=0, time_scale=0.001, startup_timeout_s=60)
DEADLINE_S = 20.0


def test_the_default_launcher_sweeps_a_disaggregated_recipe(tmp_path: Path) -> None:
    args = ["sweep", "--recipe", RECIPE, "--artifacts-dir", str(tmp_path / "art"),
            "--num-prompts", "2", "--time-scale", "0.001", "--load-time-s", "0",
            "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env={"INFERX_STATE_DIR": str(tmp_path / "state")})
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.stdout)["jobs"]
    assert [job["status"] for job in jobs] == ["ok", "ok"]
    raw = RawResult.model_validate_json(Path(jobs[0]["result_path"]).read_text())
    assert raw.metadata["deployment"] == "disagg 1P tp1 + 1D tp1"
    assert raw.metadata["router_ran"].startswith("vllm-router ")
    assert str(raw.metadata["workers"]).startswith("prefill[0]=http://127.0.0.1:")


def test_a_dead_decode_worker_is_named_with_its_lines(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "recipes/multinode" / f"{RECIPE}.yaml").read_text())
    catalog = cached_catalog(ROOT / "catalog")
    golden = load_golden(ROOT / "golden_al_distribution")
    job = expand([Recipe.model_validate(doc)], golden=golden, catalog=catalog)[0]
    spec = job_spec(job, catalog.sku(job.sku), SimAdapter(FAST))
    with SubprocessLauncher(tmp_path / "logs").start(spec) as server:
        assert isinstance(server, LocalDeployment)
        server.wait_healthy()
        config = BenchConfig(
            endpoint=server.base_url, model=spec.client.model_name, api="completions",
            dataset=RandomSpec(input_len=256, output_len=8), concurrency=1, num_prompts=2,
        )  # fmt: skip
        assert benchmark(config).completed == 2
        decode_url = server.endpoints[1]
        assert scrape(decode_url).get("inferx_sim:prefill_computed_tokens_total") == 0
        (decode,) = [h for w, h in server.ranks if w.role == "decode"]
        psutil.Process(decode.proc.pid).send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
        deadline = time.monotonic() + DEADLINE_S
        while (status := server.exit_status()) is None and time.monotonic() < deadline:
            time.sleep(0.1)  # polling the process, bounded by the deadline
        assert status == 137
        error = str(server.exited_error(status))
        assert error.startswith(f"server {spec.name}: decode[0] exited with status 137")
    assert all(h.exit_status() is not None for _, h in server.ranks)  # nothing left running


def test_an_imported_sglang_disaggregation_with_two_node_workers_serves_here(
    tmp_path: Path,
) -> None:
    """InferenceX's DeepSeek-R1 FP8 on GB200 (prefill and decode each TP8 over two 4-GPU
    nodes) behind sglang-router's PD mode: each rank a process here, and the router finds
    every prefill worker's KV bootstrap at its HTTP port + 1, as on Slurm."""
    recipe = "dsr1-fp8-gb200-dynamo-sglang"
    masters = [
        str(ROOT / f"third_party/inferencex/configs/{v}-master.yaml") for v in ("amd", "nvidia")
    ]
    imported = tmp_path / "imported"
    done = CliRunner().invoke(cli, ["import-inferencex", *masters, "--out", str(imported)])
    assert done.exit_code == 0, done.output
    root = smoke_root(tmp_path / "root", [])
    (root / "recipes" / f"{recipe}.yaml").write_text((imported / f"{recipe}.yaml").read_text())
    env = {"INFERX_ROOT": str(root), "INFERX_STATE_DIR": str(tmp_path / "state")}
    args = ["sweep", "--recipe", recipe, "--conc", "4", "--num-prompts", "2",
            "--time-scale", "0.001", "--load-time-s", "0", "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    [job] = json.loads(result.stdout)["jobs"]
    assert job["status"] == "ok", job
    raw = RawResult.model_validate_json(Path(job["result_path"]).read_text())
    assert raw.metadata["router_ran"].startswith("sglang-router ")
    assert raw.completed == 2
