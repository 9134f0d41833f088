"""Image rules at sweep time: which rules a job's image must pass, catalog fallbacks (pure)."""

from __future__ import annotations

from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.launch.preflight import ImageFacts, check_facts
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.image_policy import (
    gate_applies,
    image_rules,
    with_catalog_facts,
)
from tests.engines.jobs import catalog_sku, recipe_jobs
from tests.sweep.conftest import SEED, policy_data

AGENTIC_SGLANG = "qwen3.5-fp8-mi300x-sglang-agentic-mtp"
GATE = "engine-version-gate sglang-simulate-acc-token-mode"


def _job_and_spec(recipe: str) -> tuple[BenchmarkJob, ServerSpec]:
    job = recipe_jobs(recipe)[0]
    return job, adapter_for(job).server_spec(job, sku=catalog_sku(job.sku))


def _facts(image: str, **facts: str | None) -> ImageFacts:
    return ImageFacts(image=image, digest="sha256:d", facts=facts)


def test_agentic_sglang_job_needs_client_python_and_the_token_mode_gate() -> None:
    job, spec = _job_and_spec(AGENTIC_SGLANG)
    rules = image_rules(job, spec, policy_data(), engine="sglang")
    assert [r.name for r in rules] == ["image-facts", GATE]
    assert rules[1].expected.startswith("acceptance synthetic needs >= 0.5.16: ")
    ok = _facts(spec.image, python_version="3.12.3", engine_version="0.5.16")
    check_facts(ok, rules)  # passes: no exception


def test_fixed_seq_len_vllm_job_has_no_image_rules() -> None:
    job, spec = _job_and_spec(SEED)
    assert image_rules(job, spec, policy_data(), engine=job.engine.framework) == ()


def test_simulator_standing_in_keeps_the_python_rule_but_no_engine_gate() -> None:
    job, spec = _job_and_spec(AGENTIC_SGLANG)
    assert [r.name for r in image_rules(job, spec, policy_data(), engine="sim")] == ["image-facts"]


def test_gate_applies_by_acceptance_then_by_the_specs_env() -> None:
    job, spec = _job_and_spec(AGENTIC_SGLANG)
    (gate,) = policy_data().gates
    assert gate_applies(gate, job, spec, "sglang") == "acceptance synthetic"
    evaluated = job.evolve(run_eval=True)  # evals verify for real: only the env can apply it
    assert gate_applies(gate, evaluated, spec, "sglang") == "env SGLANG_SIMULATE_ACC_TOKEN_MODE"
    bare = spec.model_copy(update={"env": {}})
    assert gate_applies(gate, evaluated, bare, "sglang") is None


def test_unknown_facts_fall_back_to_image_facts_yaml_then_the_tag() -> None:
    data = policy_data()
    listed = with_catalog_facts(
        _facts("lmsysorg/sglang:v0.5.16-rocm720-mi30x", python_version=None, engine_version=None),
        data,
        engine="sglang",
    )
    assert listed.facts == {"python_version": "3.10.12", "engine_version": "0.5.16"}
    tagged = with_catalog_facts(
        _facts("lmsysorg/sglang:v0.5.14-cu126", python_version="3.12.3", engine_version=None),
        data,
        engine="sglang",
    )
    assert tagged.facts == {"python_version": "3.12.3", "engine_version": "0.5.14"}
    probed = _facts("lmsysorg/sglang:v0.5.14-cu126", engine_version="0.5.17")
    assert with_catalog_facts(probed, data, engine="sglang") == probed  # the image wins
    sim = with_catalog_facts(_facts("lmsysorg/sglang:v0.5.14-cu126"), data, engine="sim")
    assert sim.facts == {}
