"""Expansion: one job per row x concurrency, derived fields, spec resolution, duplicates."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import GoldenCurveError, MatrixError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes.schema import Recipe


def test_range_doubles_and_includes_end(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    jobs = expand([make_recipe()], golden=golden, catalog=catalog)
    assert [j.conc for j in jobs] == [4, 8, 16, 32, 64, 100]
    assert {j.max_model_len for j in jobs} == {8192 + 1024 + 256}
    assert {j.exp_name for j in jobs} == {"dsr1_8k1k"}
    assert len({j.fingerprint for j in jobs}) == 1  # conc is not in the fingerprint
    assert jobs[0].job_id == "r1/fixed-seq-len-8192x1024/tp8/c4"
    assert jobs[0].sku == "h200" and jobs[0].gpus == 8


def test_identical_jobs_from_two_recipes_name_both(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    with pytest.raises(MatrixError, match=r"recipe r1 .*recipe r2"):
        expand([make_recipe(), make_recipe(id="r2")], golden=golden, catalog=catalog)
    kept = expand(
        [make_recipe(), make_recipe(id="r2")], golden=golden, catalog=catalog, duplicates="keep"
    )
    assert len(kept) == 12


def test_image_changes_fingerprint(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    other = make_recipe(id="r2", engine={"framework": "vllm", "image": "vllm/vllm-openai:v0.12"})
    jobs = expand([make_recipe(), other], golden=golden, catalog=catalog)
    assert jobs[0].fingerprint != jobs[6].fingerprint


def _synthetic(make_recipe: Callable[..., Recipe], thinking: str | None) -> Recipe:
    model = {"hf-id": "Qwen/Qwen3.5-397B-A17B-FP8", "model-prefix": "qwen3.5", "precision": "fp8"}
    if thinking is not None:
        model["thinking"] = thinking
    return make_recipe(
        model=model,
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
    )


def test_synthetic_al_comes_from_the_golden_curve(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    jobs = expand([_synthetic(make_recipe, "on")], golden=golden, catalog=catalog)
    assert {j.spec.target_al for j in jobs} == {3.39}
    assert jobs[0].spec.arm == "mtp" and jobs[0].client.chat_template_kwargs == {
        "enable_thinking": True
    }


def test_synthetic_without_thinking_mode_is_an_error(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    with pytest.raises(GoldenCurveError, match=r"family qwen3\.5 has no fixed mode"):
        expand([_synthetic(make_recipe, None)], golden=golden, catalog=catalog)


def test_agentic_dram_budget_and_exp_name(
    make_recipe: Callable[..., Recipe],
    golden: GoldenRegistry,
    catalog: Catalog,
    runners: RunnerCatalog,
) -> None:
    row = {
        "tp": 8,
        "spec-decoding": "mtp",
        "kv-offloading": "dram",
        "kv-offload-backend": {"name": "hicache"},
        "conc-list": [32],
    }
    recipe = make_recipe(
        runner="cluster:mi355x-amds",
        sku="mi355x",
        scenarios={"agentic-coding": [{"dram-utilization": 0.8, "search-space": [row]}]},
    )
    (job,) = expand([recipe], golden=golden, catalog=catalog, runners=runners)
    assert job.total_cpu_dram_gb == 2399  # min(3_095_781, cap) MiB x 0.8 x 8/8
    assert job.exp_name == "dsr1_tp8_conc32_kvdram-hicache_spec-mtp"
    assert job.duration_s == 3600 and job.max_model_len is None


def test_dram_arm_without_runner_facts_is_an_error(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    row = {"tp": 8, "kv-offloading": "dram", "conc-list": [4]}
    recipe = make_recipe(
        scenarios={"agentic-coding": [{"dram-utilization": 0.5, "search-space": [row]}]}
    )
    with pytest.raises(MatrixError, match="needs runner facts"):
        expand([recipe], golden=golden, catalog=catalog)


def test_same_layout_twice_gets_distinct_ids(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    rows = [{"tp": 8, "conc-list": [4]}, {"tp": 8, "conc-list": [8]}]
    block = {"isl": 1024, "osl": 1024, "search-space": rows}
    jobs = expand(
        [make_recipe(scenarios={"fixed-seq-len": [block]})], golden=golden, catalog=catalog
    )
    assert [j.job_id for j in jobs] == [
        "r1/fixed-seq-len-1024x1024/tp8/c4",
        "r1/fixed-seq-len-1024x1024/tp8-row2/c8",
    ]
