"""ATOM adapter: server argv and the synthetic acceptance-length flag, checked within [1, k+1]."""

from __future__ import annotations

import pytest

from inferx_pipeline.engines.atom import AtomAdapter
from inferx_pipeline.errors import LaunchError
from tests.engines.jobs import catalog_sku, recipe_jobs, with_spec

AGENTIC = "kimik3-fp4-mi355x-atom-agentic-mtp"


def test_synthetic_al_is_a_flag_with_the_golden_value() -> None:
    job = recipe_jobs(AGENTIC)[0]
    spec = AtomAdapter().server_spec(job, sku=catalog_sku(job.sku))
    argv = list(spec.argv)
    assert argv[:3] == ["python3", "-m", "atom.entrypoints.openai_server"]
    assert argv[argv.index("--server-port") + 1] == "{port}"
    assert argv[argv.index("--spec-decode-acceptance-length") + 1] == str(job.spec.target_al)
    assert argv[argv.index("--num-speculative-tokens") + 1] == str(job.spec.draft_tokens)
    assert spec.gpus.vendor == "amd"


def test_al_beyond_k_plus_one_is_refused() -> None:
    job = with_spec(recipe_jobs(AGENTIC)[0], draft_tokens=2, target_al=3.5)
    with pytest.raises(LaunchError) as err:
        AtomAdapter().argv(job, job.parallel)  # type: ignore[arg-type]  # single-node job
    assert str(err.value) == (
        f"{job.job_id}: synthetic acceptance length 3.5 is outside [1, 3] for 2 draft tokens; "
        f"check the golden curve {job.spec.curve} or draft-tokens"
    )


def test_eval_jobs_get_no_acceptance_flag() -> None:
    job = recipe_jobs(AGENTIC)[0].evolve(run_eval=True)
    assert "--spec-decode-acceptance-length" not in AtomAdapter().argv(job, job.parallel)  # type: ignore[arg-type]


def test_no_spec_recipe_has_no_spec_flags() -> None:
    job = recipe_jobs("dsr1-fp8-mi355x-atom")[0]
    argv = AtomAdapter().argv(job, job.parallel)  # type: ignore[arg-type]
    assert "--method" not in argv and argv[argv.index("-tp") + 1] == "8"
