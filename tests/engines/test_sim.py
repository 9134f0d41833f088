"""Sim adapter: any job -> `inferx sim serve` standing in for it, with no GPUs."""

from __future__ import annotations

from inferx_pipeline.engines.sim import SimAdapter, SimOptions
from inferx_pipeline.settings import Settings
from tests.engines.jobs import catalog_sku, recipe_jobs, with_spec

SEED = "qwen3.827b-bf16-mi325x-vllm-mtp"


def _flags(argv: tuple[str, ...]) -> dict[str, str]:
    """``--flag value`` pairs of the serve argv (bare flags map to '')."""
    out, items = {}, list(argv[5:])
    while items:
        flag = items.pop(0)
        out[flag] = items.pop(0) if items and not items[0].startswith("--") else ""
    return out


def test_sim_spec_carries_the_job_and_asks_no_gpu() -> None:
    job = recipe_jobs(SEED)[-1]
    spec = SimAdapter(SimOptions(image="inferx-sim:test")).server_spec(
        job, sku=catalog_sku(job.sku)
    )
    assert spec.argv[:5] == ("python", "-m", "inferx_pipeline", "sim", "serve")
    flags = _flags(spec.argv)
    assert flags["--sku"] == "mi325x" and flags["--model-family"] == job.model.family
    assert "--max-num-seqs" not in flags  # no rule in this recipe: the simulator default
    assert flags["--max-model-len"] == str(job.max_model_len)
    assert flags["--acceptance-length"] == "2.51" and flags["--spec-method"] == "mtp"
    assert flags["--served-model-name"] == spec.client.model_name == job.model.hf_id
    assert spec.gpus.count == 0 and spec.image == "inferx-sim:test"
    assert spec.labels["inferx.simulated"] == "true"


def test_sim_flags_are_a_valid_simulator_config() -> None:
    # Every flag maps one to one onto a SimConfig field: the argv must validate there.
    job = recipe_jobs(SEED)[0]
    options = SimOptions(load_time_s=0, time_scale=0.5, error_rate=0.1, crash_after_tokens=9)
    config = SimAdapter(options).sim_config(job, Settings().catalog_dir)
    assert config.crash_after_tokens == 9 and config.error_rate == 0.1
    assert config.acceptance_length == job.spec.target_al
    assert config.max_model_len == job.max_model_len and config.engine == "vllm"


def test_max_num_seqs_follows_the_recipe_rule_at_the_group_conc() -> None:
    job = recipe_jobs("qwen3.827b-fp8-h200-vllm-mtp")[-1]
    flags = _flags(SimAdapter().argv(job, job.parallel))  # type: ignore[arg-type]
    assert job.max_num_seqs is not None
    assert flags["--max-num-seqs"] == str(job.max_num_seqs)


def test_real_acceptance_uses_the_stated_assumption() -> None:
    job = with_spec(recipe_jobs(SEED)[0], acceptance="real", target_al=None, draft_tokens=4)
    assert SimAdapter(SimOptions(real_acceptance_fraction=0.5)).acceptance_length(job) == 3.0
