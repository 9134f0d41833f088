"""Eval test fixtures: the eval catalog, seed recipes' jobs and their server specs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, load_eval_catalog
from inferx_pipeline.matrix.evals import EvalMode
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.paths import ROOT

# Seed recipes whose throughput jobs accept drafts synthetically (golden AL).
VLLM_SYNTHETIC = "minimaxm3-fp8-mi325x-vllm-agentic-mtp"
SGLANG_SYNTHETIC = "qwen3.5-fp8-mi300x-sglang-agentic-mtp"
# The tiny CPU recipe: completions API, the project's own task.
TINY = "tiny-qwen3-bf16-cpu-vllm-ngram"


@pytest.fixture(scope="session")
def evals() -> EvalCatalog:
    return load_eval_catalog(ROOT / "catalog")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return cached_catalog(ROOT / "catalog")


def recipe_jobs(recipe: str, evals: EvalMode) -> list[BenchmarkJob]:
    """The jobs of seed recipe ``recipe`` a sweep runs in eval mode ``evals``."""
    request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe,)), evals=evals)
    return build_matrix(request, Settings())


@pytest.fixture(scope="session")
def spec_of(catalog: Catalog) -> Callable[[BenchmarkJob], ServerSpec]:
    """The final ServerSpec the job's engine adapter builds."""

    def spec(job: BenchmarkJob) -> ServerSpec:
        return adapter_for(job).server_spec(job, sku=catalog.sku(job.sku))

    return spec


@pytest.fixture
def served_tiny() -> Iterator[str]:
    """The simulator on a free loopback port answering as the tiny model; its base URL.

    Ready once it prints its URL (no load time).
    """
    argv = [sys.executable, "-m", "inferx_pipeline", "sim", "serve", "--sku", "h100"]
    argv += ["--model-family", "qwen3.8-27b", "--served-model-name", "inferx/tiny-qwen3"]
    argv += ["--port", "0", "--load-time-s", "0", "--time-scale", "0.01"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed and flushed once bound
        assert line.startswith("INFERX_SIM_LISTENING "), line
        yield line.split()[1]
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
