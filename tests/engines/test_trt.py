"""TensorRT-LLM adapter: trtllm-serve argv, the LLM-API options YAML, synthetic acceptance env."""

from __future__ import annotations

import subprocess
import sys

import yaml

from inferx_pipeline.engines.trt import (
    FORCE_ACCEPTED_ENV,
    OPTIONS_PLACEHOLDER,
    WRITE_OPTIONS_THEN_EXEC,
    TrtAdapter,
    llm_api_options,
)
from inferx_pipeline.matrix.job import BenchmarkJob
from tests.engines.jobs import catalog_sku, recipe_jobs, with_spec

TRT = "dsr1-fp8-h200-trt"


def _job() -> BenchmarkJob:
    return recipe_jobs(TRT)[-1]


def test_argv_is_bootstrap_then_trtllm_serve_with_options_file() -> None:
    job = _job()
    spec = TrtAdapter().server_spec(job, sku=catalog_sku(job.sku))
    assert spec.argv[:2] == ("python3", "-c")
    assert spec.argv[2] == WRITE_OPTIONS_THEN_EXEC
    serve = spec.argv[4:]
    assert serve[:3] == ("trtllm-serve", "serve", job.model.hf_id)
    assert serve[serve.index("--port") + 1] == "{port}"
    assert serve[serve.index("--tp_size") + 1] == "8"
    assert serve[serve.index("--extra_llm_api_options") + 1] == OPTIONS_PLACEHOLDER
    assert yaml.safe_load(spec.argv[3]) == llm_api_options(job)
    assert spec.gpus.vendor == "nvidia" and spec.gpus.count == 8


def test_bootstrap_writes_yaml_and_execs_with_its_path() -> None:
    # The fixed program runs here with `cat` standing in for trtllm-serve.
    argv = [sys.executable, "-c", WRITE_OPTIONS_THEN_EXEC, "a: 1\n", "cat", OPTIONS_PLACEHOLDER]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout == "a: 1\n"


def test_synthetic_acceptance_forces_al_minus_one_accepted_tokens() -> None:
    job = with_spec(_job(), method="mtp", draft_tokens=3, acceptance="synthetic", target_al=2.51)
    adapter = TrtAdapter()
    assert adapter.env(job)[FORCE_ACCEPTED_ENV] == "1.51"
    options = llm_api_options(job)
    assert options["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}


def test_eval_jobs_verify_for_real() -> None:
    job = with_spec(_job(), method="mtp", draft_tokens=3, acceptance="synthetic", target_al=2.51)
    assert FORCE_ACCEPTED_ENV not in TrtAdapter().env(job.evolve(run_eval=True))
