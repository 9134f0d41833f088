"""lm-eval against a real engine: the tiny model on vLLM for CPU, started as a sweep would.

One server start (about 25-70 s on 2 cores) and one harness run (about a minute).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.evals.catalog import EvalCatalog
from inferx_pipeline.evals.harness import run_harness
from inferx_pipeline.evals.invocation import lm_eval_run
from inferx_pipeline.evals.verification import check_real_verification
from inferx_pipeline.launch.local import LocalLauncher
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from tests.services.vllm import CpuHost

from .conftest import TINY, recipe_jobs

pytestmark = pytest.mark.vllm
HARNESS_TIMEOUT_S = 900.0
STARTUP_TIMEOUT_S = 300.0


def test_lm_eval_scores_the_tiny_model_served_by_vllm(
    tmp_path: Path,
    evals: EvalCatalog,
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    cpu_host: CpuHost,
    lm_eval_python: Path,
) -> None:
    job = eval_job(recipe_jobs(TINY, "none")[-1])  # n-gram drafts, verified for real
    handle = LocalLauncher(cpu_host.host, tmp_path / "logs").start(spec_of(job))
    try:
        check_real_verification(job, handle.spec, evals.synthetic_acceptance)  # as it runs
        handle.wait_healthy(STARTUP_TIMEOUT_S)
        run = lm_eval_run(
            job,
            handle.spec,
            base_url=handle.base_url,
            evals=evals,
            python=lm_eval_python,
            output_dir=tmp_path / "eval",
            hf_home=tmp_path / "hf-home",
        )
        score = run_harness(run, timeout_s=HARNESS_TIMEOUT_S)
    finally:
        handle.stop()
    assert (score.n_original, score.n_effective, score.passed) == (30, 30, True)
    assert {f.filter for f in score.filters} == {"strict-match", "flexible-extract"}
    samples = [json.loads(line) for line in score.samples_file.read_text().splitlines()]
    answers = [sample["resps"][0][0] for sample in samples]
    assert len(answers) == 60 and all(isinstance(a, str) for a in answers)
    assert any(answers)  # the engine answered (the random model's words, scored as wrong)
