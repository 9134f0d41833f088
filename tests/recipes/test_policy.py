"""Policy rules as functions: image versions, thinking families, memory sizing, rule names."""

from __future__ import annotations

from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes import policy
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.policy.images import engine_version, split_image, version_tuple
from inferx_pipeline.recipes.schema import Recipe


def _recipe(**over: Any) -> Recipe:
    doc: dict[str, Any] = {
        "id": "t",
        "model": {
            "hf-id": "deepseek-ai/DeepSeek-R1-0528",
            "model-prefix": "dsr1",
            "precision": "fp8",
        },
        "sku": "mi355x",
        "engine": {"framework": "sglang", "image": "lmsysorg/sglang:v0.5.16-cu130"},
        "scenarios": {
            "fixed-seq-len": [
                {"isl": 8192, "osl": 1024, "search-space": [{"tp": 8, "conc-list": [64]}]}
            ]
        },
    }
    for key, value in over.items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    return Recipe.model_validate(doc)


def _check(
    recipe: Recipe, catalog: Catalog, golden: GoldenRegistry, data: PolicyData, *rules: str
) -> list[str]:
    found = policy.check(recipe, catalog=catalog, golden=golden, data=data, rules=rules or None)
    return [f"{f.severity} {f}" for f in found]


def test_version_helpers(policy: PolicyData) -> None:
    assert version_tuple("0.5.16.post1") < version_tuple("0.5.17")
    assert version_tuple("3.10.12") < version_tuple("3.11")
    assert split_image("lmsysorg/sglang:v0.5.14-cu130@sha256:ab") == (
        "lmsysorg/sglang",
        "v0.5.14-cu130",
    )
    assert split_image("localhost:5000/x") == ("localhost:5000/x", "")
    assert engine_version(policy, "lmsysorg/sglang:v0.5.12.post1") == "0.5.12.post1"
    assert engine_version(policy, "vllm/vllm-openai:nightly-3ee2df3") is None
    assert engine_version(policy, "lmsysorg/sglang:v0.5.16-rocm720-mi30x") == "0.5.16"


def test_unknown_version_under_a_gate_is_an_error(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    recipe = _recipe(
        model={"hf-id": "Qwen/Qwen3.5-397B-A17B-FP8", "model-prefix": "qwen3.5", "thinking": "on"},
        engine={"image": "lmsysorg/sglang:nightly-dev-20260527-14f81a67"},
        speculative={
            "method": "eagle",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
    )
    lines = _check(recipe, catalog, golden, policy, "engine-version-gate")
    assert len(lines) == 1 and "cannot tell the sglang version" in lines[0]


def test_thinking_rules_follow_the_family(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    assert _check(_recipe(), catalog, golden, policy, "thinking-explicit") == []  # dsr1 always
    off = _recipe(model={"thinking": "off"})
    assert _check(off, catalog, golden, policy, "thinking-explicit") == [
        "error model.thinking: got 'off'; model family dsr1 always thinks: use thinking: on "
        "[thinking-explicit]"
    ]


def test_golden_curve_of_another_family_is_an_error(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    recipe = _recipe(
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        }
    )
    lines = _check(recipe, catalog, golden, policy, "golden-al-only")
    assert any("measured on family qwen3.5; this recipe serves dsr1" in line for line in lines)


def test_memory_fit_warns_near_the_budget(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    # dsr1 FP8 on 8 x MI355X at 0.88 (272.1 GB of 288 GiB): weights 86.4 GB + KV for N x 9,472
    # tokens, 0.66 GB each.
    fits = _recipe()
    assert _check(fits, catalog, golden, policy, "memory-fit") == []
    near = _recipe(engine={"max-num-seqs": 260})
    (line,) = _check(near, catalog, golden, policy, "memory-fit")
    assert line.startswith("warning ") and "within 10% of the budget" in line
    over = _recipe(engine={"max-num-seqs": 400})
    (line,) = _check(over, catalog, golden, policy, "memory-fit")
    assert line.startswith("error ") and "272.1 GB (288 GiB HBM x 0.88" in line


def test_dram_arm_needs_a_backend(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    recipe = _recipe(
        scenarios={
            "agentic-coding": [
                {
                    "search-space": [
                        {"tp": 8, "kv-offloading": "dram", "conc-list": [4], "spec-decoding": "mtp"}
                    ]
                }
            ]
        },
        speculative={"method": "mtp", "draft-tokens": 3},
    )
    lines = _check(recipe, catalog, golden, policy, "vendor-kv-offload")
    assert len(lines) == 1 and "kv-offloading dram needs kv-offload-backend" in lines[0]


def test_speculative_row_needs_a_speculative_block(
    catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> None:
    recipe = _recipe(
        scenarios={
            "fixed-seq-len": [
                {
                    "isl": 1024,
                    "osl": 1024,
                    "search-space": [{"tp": 8, "conc-list": [4], "spec-decoding": "mtp"}],
                }
            ]
        }
    )
    lines = _check(recipe, catalog, golden, policy, "referential")
    assert len(lines) == 1 and "speculative block has method none" in lines[0]


def test_unknown_rule_name(catalog: Catalog, golden: GoldenRegistry, policy: PolicyData) -> None:
    with pytest.raises(KeyError, match="unknown policy rule"):
        _check(_recipe(), catalog, golden, policy, "no-such-rule")


def test_rule_table_names() -> None:
    assert list(policy.RULES) == [
        "thinking-explicit",
        "golden-al-only",
        "engine-version-gate",
        "image-ref",
        "image-facts",
        "image-track",
        "vendor-kv-offload",
        "agentic-spec-decoding",
        "memory-fit",
        "referential",
        "secret-literal",
        "control-chars",
    ]
