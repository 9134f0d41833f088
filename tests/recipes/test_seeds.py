"""The shipped recipes: all valid, and the four seed recipes carry exactly the issue's facts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes.loader import LoadedRecipe, LoadResult
from inferx_pipeline.recipes.schema import MaxNumSeqsRule

SEEDS = {
    "qwen3.827b-bf16-mi325x-vllm-mtp": 8,
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp": 9,
    "qwen3.827b-fp8-h200-vllm-mtp": 8,
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp": 23,
}


@pytest.fixture
def shipped(load: Callable[..., LoadResult]) -> dict[str, LoadedRecipe]:
    result = load("recipes")
    assert [str(e) for e in result.errors] == []
    return {r.recipe.id: r for r in result.recipes}


def _points(loaded: LoadedRecipe) -> int:
    return sum(len(row.concurrencies()) for row in loaded.recipe.scenarios.rows())


def test_every_shipped_recipe_validates(shipped: dict[str, LoadedRecipe]) -> None:
    assert set(SEEDS) <= set(shipped)
    frameworks = {r.recipe.engine.framework for r in shipped.values()}
    assert {"vllm", "sglang", "trt", "atom"} <= frameworks
    assert any(r.recipe.scenarios.fixed_seq_len for r in shipped.values())
    assert any(r.recipe.scenarios.agentic_coding for r in shipped.values())


@pytest.mark.parametrize(("recipe_id", "points"), sorted(SEEDS.items()))
def test_seed_concurrency_points(
    shipped: dict[str, LoadedRecipe], recipe_id: str, points: int
) -> None:
    assert _points(shipped[recipe_id]) == points


def test_seed_golden_al_resolves(shipped: dict[str, LoadedRecipe], golden: GoldenRegistry) -> None:
    expected = {
        "qwen3.827b-bf16-mi325x-vllm-mtp": 2.51,
        "qwen3.5-fp8-mi300x-sglang-agentic-mtp": 3.39,
        "minimaxm3-fp8-mi325x-vllm-agentic-mtp": 2.83,
    }
    for recipe_id, al in expected.items():
        recipe = shipped[recipe_id].recipe
        spec = recipe.speculative
        assert spec.curve is not None and spec.draft_tokens is not None
        assert recipe.model.thinking == "on"
        assert golden.lookup(spec.curve, "on", spec.draft_tokens).al == al


def test_qwen38_bf16_seed(shipped: dict[str, LoadedRecipe]) -> None:
    loaded = shipped["qwen3.827b-bf16-mi325x-vllm-mtp"]
    r = loaded.recipe
    assert (r.model.hf_id, r.model.precision, r.model.kv_cache_dtype) == (
        "Qwen/Qwen3.8-27B",
        "bf16",
        "bf16",
    )
    assert (r.sku, r.engine.framework, r.speculative.method) == ("mi325x", "vllm", "mtp")
    assert r.engine.image.endswith(":nightly-a8d1aa9c99b8698a2a78b611b7a10c30e6b3995b")
    row = r.scenarios.rows()[0]
    assert row.concurrencies() == (1, 2, 4, 8, 16, 32, 64, 128)
    block = r.scenarios.fixed_seq_len[0]
    assert (block.isl, block.osl, getattr(row, "tp", None)) == (1024, 1024, 1)
    assert r.client.api == "chat"
    assert len(loaded.chain) == 3  # the recipe and its two fragments


def test_qwen38_fp8_h200_seed(shipped: dict[str, LoadedRecipe]) -> None:
    r = shipped["qwen3.827b-fp8-h200-vllm-mtp"].recipe
    assert (r.model.hf_id, r.model.kv_cache_dtype, r.sku) == ("Qwen/Qwen3.8-27B-FP8", "fp8", "h200")
    assert r.speculative.acceptance == "real" and r.speculative.draft_tokens == 3
    rule = r.engine.max_num_seqs
    assert isinstance(rule, MaxNumSeqsRule)
    assert [rule.for_conc(c) for c in (1, 16, 128)] == [16, 16, 128]
    assert rule.for_conc(4, is_eval=True) == 256
    assert r.engine.args == {
        "--no-enable-prefix-caching": True,
        "--language-model-only": True,
        "--reasoning-parser": "qwen3",
        "--tool-call-parser": "qwen3_xml",
    }


def test_sglang_seed(shipped: dict[str, LoadedRecipe]) -> None:
    r = shipped["qwen3.5-fp8-mi300x-sglang-agentic-mtp"].recipe
    assert r.engine.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    assert (r.speculative.method, r.speculative.draft_tokens) == ("eagle", 3)
    assert (r.speculative.topk, r.speculative.verify_tokens) == (1, 4)
    assert r.engine.gpu_memory_utilization == 0.75
    arms = [(row.kv_offloading, row.concurrencies()) for row in r.scenarios.rows()]
    assert arms == [("none", (1, 4, 8, 12, 16)), ("dram", (4, 8, 12, 16))]


def test_minimax_seed(shipped: dict[str, LoadedRecipe]) -> None:
    r = shipped["minimaxm3-fp8-mi325x-vllm-agentic-mtp"].recipe
    assert r.speculative.draft_model == "Inferact/MiniMax-M3-EAGLE3"
    assert r.engine.env == {"VLLM_USE_BREAKABLE_CUDAGRAPH": "0"}
    assert r.engine.max_num_seqs == MaxNumSeqsRule.model_validate({"per-conc": 2})
    layouts = [
        (row.tp, row.ep, row.dp_attn, row.kv_offloading)  # type: ignore[union-attr]
        for row in r.scenarios.rows()
    ]
    assert layouts == [
        (4, 1, False, "none"),
        (4, 4, False, "none"),
        (8, 1, False, "none"),
        (8, 8, False, "none"),
        (8, 8, True, "none"),
    ]


def test_fp8_recipes_against_fp4_curves_warn(load: Callable[..., LoadResult]) -> None:
    result = load("recipes")
    assert [str(w) for w in result.warnings if w.rule == "golden-al-only"] == [
        "recipes/minimaxm3/minimaxm3-fp8-mi325x-vllm-agentic-mtp.yaml:31:10: speculative.curve:"
        " golden curve 'minimaxm3_eagle3' was measured on FP4 (minimax-m3, b300) but the recipe"
        " serves FP8; the synthetic AL may not match this checkpoint [golden-al-only]",
        "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml:33:10: speculative.curve: "
        "golden curve 'qwen3.5_mtp' was measured on NVFP4 (qwen3.5-397b-a17b-nvfp4, b300) but "
        "the recipe serves FP8; the synthetic AL may not match this checkpoint [golden-al-only]",
    ]
