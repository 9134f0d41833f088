"""Eval selection: InferenceX's default policy (8k1k, conc >= 16, median and max per group)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.evals import load_eval_policies
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.schema import Recipe

from .conftest import ROOT

POLICIES = load_eval_policies(ROOT / "catalog")


def _expand(recipes: list[Recipe], golden: GoldenRegistry, catalog: Catalog) -> list[BenchmarkJob]:
    return expand(recipes, golden=golden, catalog=catalog, evals=True, eval_policies=POLICIES)


def test_median_and_max_of_the_group(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    # 4..100 -> eligible 16, 32, 64, 100 -> median sorted[2] = 64, max 100
    jobs = _expand([make_recipe()], golden, catalog)
    evals = [j for j in jobs if j.run_eval]
    assert [j.conc for j in evals] == [64, 100]
    assert evals[0].job_id.endswith("/c64/eval")
    assert jobs[jobs.index(evals[0]) - 1].conc == 64  # the eval follows its benchmark job


def test_1k1k_gets_no_default_evals(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    block = {
        "isl": 1024,
        "osl": 1024,
        "search-space": [{"tp": 1, "conc-start": 1, "conc-end": 128}],
    }
    jobs = _expand([make_recipe(scenarios={"fixed-seq-len": [block]})], golden, catalog)
    assert not any(j.run_eval for j in jobs)


def test_eval_jobs_use_real_acceptance_and_eval_max_num_seqs(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    recipe = make_recipe(
        model={
            "hf-id": "Qwen/Qwen3.5-397B-A17B-FP8",
            "model-prefix": "qwen3.5",
            "precision": "fp8",
            "thinking": "on",
        },
        engine={
            "framework": "vllm",
            "image": "vllm/vllm-openai:v0.11.0",
            "max-num-seqs": {"per-conc": 1, "floor": 16, "eval": 256},
        },
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
    )
    jobs = _expand([recipe], golden, catalog)
    bench = [j for j in jobs if not j.run_eval]
    evals = [j for j in jobs if j.run_eval]
    assert [j.max_num_seqs for j in bench] == [16, 16, 16, 32, 64, 100]
    assert {(j.spec.acceptance, j.spec.target_al, j.max_num_seqs) for j in evals} == {
        ("real", None, 256)
    }
    assert not {j.fingerprint for j in evals} & {j.fingerprint for j in bench}


def test_recipe_that_never_evals(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    jobs = _expand([make_recipe(eval={"mode": "never"})], golden, catalog)
    assert not any(j.run_eval for j in jobs)


def test_unknown_group_key_is_a_catalog_error(tmp_path: Path) -> None:
    text = (ROOT / "catalog" / "eval-policy.yaml").read_text().replace("dp-attn]", "colour]")
    (tmp_path / "eval-policy.yaml").write_text(text)
    with pytest.raises(CatalogError, match=r"group-by: unknown keys \['colour'\]"):
        load_eval_policies(tmp_path)
