"""Real verification on the eval server's final ServerSpec: synthetic acceptance is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.verification import check_real_verification, synthetic_settings
from inferx_pipeline.errors import EvalError
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from tests.evals.conftest import SGLANG_SYNTHETIC, VLLM_SYNTHETIC, recipe_jobs

SpecOf = Callable[[BenchmarkJob], ServerSpec]


@pytest.mark.parametrize("recipe", [VLLM_SYNTHETIC, SGLANG_SYNTHETIC])
def test_eval_servers_verify_for_real(recipe: str, spec_of: SpecOf, evals: EvalCatalog) -> None:
    jobs = recipe_jobs(recipe, "all")
    assert jobs and all(job.run_eval for job in jobs)
    for job in jobs:
        spec = spec_of(job)
        assert synthetic_settings(spec, evals.synthetic_acceptance) == []
        check_real_verification(job, spec, evals.synthetic_acceptance)


def test_the_throughput_servers_it_replaces_do_not(spec_of: SpecOf, evals: EvalCatalog) -> None:
    vllm = recipe_jobs(VLLM_SYNTHETIC, "none")[0]
    found = synthetic_settings(spec_of(vllm), evals.synthetic_acceptance)
    assert len(found) == 1 and '"synthetic_acceptance_length": ' in found[0]
    sglang = recipe_jobs(SGLANG_SYNTHETIC, "none")[0]
    assert synthetic_settings(spec_of(sglang), evals.synthetic_acceptance) == [
        "SGLANG_SIMULATE_ACC_LEN",
        "SGLANG_SIMULATE_ACC_METHOD",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE",
    ]


def test_a_throughput_job_or_a_synthetic_spec_is_refused(
    spec_of: SpecOf, evals: EvalCatalog, catalog: Catalog
) -> None:
    banned = evals.synthetic_acceptance
    job = recipe_jobs(SGLANG_SYNTHETIC, "none")[0]
    with pytest.raises(EvalError, match=r"/c1: not an eval job; evals run on eval jobs only$"):
        check_real_verification(job, spec_of(job), banned)
    synthetic_twin = job.evolve(run_eval=True)  # an eval job left with its golden AL
    with pytest.raises(EvalError, match=r"synthetic acceptance \(target AL 3\.\d+\)"):
        check_real_verification(synthetic_twin, spec_of(job), banned)
    twin = eval_job(job, evals=evals, catalog=catalog)
    injected = spec_of(twin).model_copy(update={"env": {"SGLANG_SIMULATE_ACC_LEN": "3"}})
    with pytest.raises(
        EvalError, match=r"command carries synthetic acceptance: SGLANG_SIMULATE_ACC_LEN;"
    ):
        check_real_verification(twin, injected, banned)
