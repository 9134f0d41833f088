"""Reading a server command as engines do, and the final-command rules on hand-made commands."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.recipes.policy import check_served
from inferx_pipeline.recipes.policy.argv import (
    Flag,
    flags,
    last_value,
    mapping_items,
    norm,
    recipe_flag,
    squash,
)
from inferx_pipeline.recipes.policy.data import PolicyData
from inferx_pipeline.recipes.policy.served import Served
from inferx_pipeline.recipes.schema import Recipe


def test_flag_names_compare_as_engines_read_them() -> None:
    assert norm("--GPU_Memory-utilization") == "gpu-memory-utilization"
    assert squash("MooncakeConnector_V1") == "mooncakeconnectorv1"
    argv = ["serve", "m", "--a=1", "--b", "2", "--bare", "--neg", "-3", "--a", "4"]
    assert flags(argv) == [
        Flag("a", "1", 2),
        Flag("b", "2", 3),
        Flag("bare", None, 5),
        Flag("neg", "-3", 6),
        Flag("a", "4", 8),
    ]
    assert last_value(argv, ["--A"]) == Flag("a", "4", 8)  # the last one wins


def test_json_and_yaml_inside_an_argument() -> None:
    assert mapping_items('{"Synthetic_Acceptance_Length": 2.5, "x": {"kv_connector": "M"}}') == [
        ("synthetic-acceptance-length", 2.5),
        ("x", {"kv_connector": "M"}),
        ("kv-connector", "M"),
    ]
    assert mapping_items("speculative_config:\n  max_draft_len: 3\n") == [
        ("speculative-config", {"max_draft_len": 3}),
        ("max-draft-len", 3),
    ]
    assert mapping_items("not json") == [] and mapping_items(None) == []


def test_recipe_args_in_every_form() -> None:
    names = ["--gpu-memory-utilization"]
    assert recipe_flag({"--gpu_memory_utilization": 0.97}, names) == "0.97"
    assert recipe_flag({"--gpu-memory-utilization=0.98": True}, names) == "0.98"
    assert recipe_flag(["--x", "--gpu-memory-utilization", "0.5"], names) == "0.5"
    assert recipe_flag({"--gpu-memory-utilization": None}, names) is None


def _recipe(catalog: Catalog, framework: str) -> Recipe:
    return Recipe.model_validate(
        {
            "id": "r",
            "model": {"hf-id": "x", "model-prefix": "dsr1", "precision": "fp8"},
            "sku": "h200",
            "engine": {"framework": framework, "image": "x/y:1"},
            "speculative": {
                "method": "mtp",
                "draft-tokens": 3,
                "acceptance": "synthetic",
                "curve": "dsv4_mtp",
            },
            "scenarios": {
                "fixed-seq-len": [
                    {"isl": 1, "osl": 1, "search-space": [{"tp": 8, "conc-list": [1]}]}
                ]
            },
        }
    )


def _served(framework: str, argv: tuple[str, ...], env: dict[str, str]) -> Served:
    return Served(
        job_id="j",
        framework=framework,
        scenario="fixed-seq-len",
        is_eval=False,
        target_al=2.5,
        image="x/y:1",
        argv=argv,
        env=env,
        speculative=True,
        draft_tokens=3,
    )


@pytest.mark.parametrize(
    ("framework", "argv", "env", "findings"),
    [
        # TensorRT-LLM forces accepted draft tokens = AL - 1; its options YAML holds the length.
        ("trt", ("-c", "p", "speculative_config:\n  max_draft_len: 3\n"), {
            "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.5"}, 0),
        ("trt", ("-c", "p", "speculative_config:\n  max_draft_len: 4\n"), {
            "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "2.5"}, 2),
        ("atom", ("--num-speculative-tokens", "3", "--spec-decode-acceptance-length", "2.5"),
         {}, 0),
        ("atom", ("--num-speculative-tokens", "3", "--spec_decode_acceptance_length=2.6"), {}, 1),
        ("sglang", ("--speculative-num-steps", "3"), {"SGLANG_SIMULATE_ACC_LEN": "2.5"}, 0),
        ("sglang", ("--speculative-num-steps", "3", "--speculative_num_steps", "5"), {
            "SGLANG_SIMULATE_ACC_LEN": "2.5"}, 1),
    ],
)  # fmt: skip
def test_acceptance_and_draft_length_on_each_engine(
    framework: str,
    argv: tuple[str, ...],
    env: dict[str, str],
    findings: int,
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
) -> None:
    recipe = _recipe(catalog, framework)
    served = _served(framework, argv, env)
    found = check_served(recipe, [served], catalog=catalog, golden=golden, data=policy)
    assert [f.rule for f in found] == ["golden-al-only"] * findings
    twin = replace(served, is_eval=True, target_al=None)
    on_eval = check_served(recipe, [twin], catalog=catalog, golden=golden, data=policy)
    assert any("on eval jobs" in f.message for f in on_eval)  # eval twins verify for real
