"""vLLM and SGLang adapters: argv, env, GPU count, synthetic acceptance, derived settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.engines.adapter import render_args
from inferx_pipeline.engines.base import ADAPTERS, adapter_for
from inferx_pipeline.errors import LaunchError
from inferx_pipeline.golden import GoldenRegistry, load_golden
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.recipes.schema import Recipe

ROOT = Path(__file__).resolve().parents[2]
CATALOG: Catalog = cached_catalog(ROOT / "catalog")
GOLDEN: GoldenRegistry = load_golden(ROOT / "golden_al_distribution")
RUNNERS = cached_runners(ROOT / "catalog")
EVALS = cached_eval_catalog(ROOT / "catalog")


def _job(framework: str, image: str, row: dict[str, Any], **over: Any) -> BenchmarkJob:
    doc: dict[str, Any] = {
        "id": "r",
        "model": {
            "hf-id": "Qwen/Qwen3.5-397B-A17B-FP8",
            "model-prefix": "qwen3.5",
            "precision": "fp8",
            "kv-cache-dtype": "fp8",
            "thinking": "on",
        },
        "sku": "mi300x",
        "engine": {
            "framework": framework,
            "image": image,
            "env": {"A": 1},
            "args": {"--flag": True, "--off": False, "--list": [1, 2]},
            "max-num-seqs": {"per-conc": 2, "eval": 256},
            "cudagraph-capture-sizes": "up-to-max-num-seqs",
        },
        "speculative": {
            "method": "mtp",
            "draft-tokens": 3,
            "topk": 1,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
        "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [row]}]},
        **over,
    }
    recipe = Recipe.model_validate(doc)
    (job,) = expand([recipe], golden=GOLDEN, catalog=CATALOG, runners=RUNNERS)
    return job


def test_registry_is_explicit() -> None:
    assert {"sglang", "vllm"} <= set(ADAPTERS)
    assert ADAPTERS["vllm"].kind == "vllm" and ADAPTERS["sglang"].kind == "sglang"


def test_vllm_synthetic_speculative_config() -> None:
    job = _job(
        "vllm", "vllm/vllm-openai:v1", {"tp": 8, "ep": 8, "dp-attn": True, "conc-list": [12]}
    )
    spec = adapter_for(job).server_spec(job, sku=CATALOG.sku("mi300x"))
    argv = list(spec.argv)
    assert argv[:9] == [
        "vllm",
        "serve",
        "{model}",
        "--served-model-name",
        "Qwen/Qwen3.5-397B-A17B-FP8",
        "--host",
        "0.0.0.0",
        "--port",
        "{port}",
    ]
    assert argv[argv.index("--data-parallel-size") + 1] == "8"
    assert argv[argv.index("--max-model-len") + 1] == "2304"
    assert argv[argv.index("--max-num-seqs") + 1] == "24"
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config == {
        "method": "mtp",
        "num_speculative_tokens": 3,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 3.39,
    }
    graphs = json.loads(argv[argv.index("--compilation-config") + 1])
    assert graphs == {"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 24]}
    assert argv[-5:] == ["--flag", "--list", "1", "--list", "2"]
    assert spec.env == {"A": "1"}
    assert (spec.gpus.vendor, spec.gpus.count) == ("amd", 8)
    assert spec.client.chat_template_kwargs == {"enable_thinking": True}


def test_vllm_eval_job_has_no_synthetic_acceptance() -> None:
    job = _job("vllm", "vllm/vllm-openai:v1", {"tp": 8, "conc-list": [16]})
    job = eval_job(job, evals=EVALS, catalog=CATALOG)
    argv = list(adapter_for(job).server_spec(job, sku=CATALOG.sku("mi300x")).argv)
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert "rejection_sample_method" not in config and "synthetic_acceptance_length" not in config
    assert argv[argv.index("--max-num-seqs") + 1] == "256"


def test_sglang_synthetic_env_and_eval() -> None:
    row = {
        "tp": 8,
        "kv-offloading": "dram",
        "kv-offload-backend": {"name": "hicache"},
        "conc-list": [4],
    }
    scen = {"agentic-coding": [{"dram-utilization": 0.5, "search-space": [row]}]}
    job = _job(
        "sglang", "lmsysorg/sglang:v0.5.16", row, scenarios=scen, runner="cluster:mi300x-amds"
    )
    spec = adapter_for(job).server_spec(job, sku=CATALOG.sku("mi300x"))
    assert spec.env == {
        "A": "1",
        "SGLANG_SIMULATE_ACC_LEN": "3.39",
        "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
    }
    argv = list(spec.argv)
    assert job.total_cpu_dram_gb is not None
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert argv[
        argv.index("--enable-hierarchical-cache") + 1 : argv.index("--hicache-size") + 2
    ] == [
        "--hicache-size",
        str(job.total_cpu_dram_gb // 8),
    ]
    evaluated = eval_job(job, evals=EVALS, catalog=CATALOG)
    assert adapter_for(evaluated).server_spec(evaluated, sku=CATALOG.sku("mi300x")).env == {
        "A": "1"
    }


def test_missing_adapter_and_multinode_are_launch_errors() -> None:
    job = _job("dynamo-vllm", "vllm/vllm-openai:v1", {"tp": 8, "conc-list": [4]})
    with pytest.raises(
        LaunchError, match="no engine adapter for framework 'dynamo-vllm'; adapters: "
    ):
        adapter_for(job)
    worker = {"num-worker": 1, "tp": 8}
    multi = _job(
        "vllm", "vllm/vllm-openai:v1", {"prefill": worker, "decode": worker, "conc-list": [4]}
    )
    with pytest.raises(LaunchError, match="multinode jobs"):
        adapter_for(multi).server_spec(multi, sku=CATALOG.sku("mi300x"))


def test_render_args_literal_list_is_verbatim() -> None:
    assert render_args(("--a", "1")) == ["--a", "1"]
