"""One thinking-mode reading for rules and matrix; the client prompts as its curve was measured."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import GoldenCurveError
from inferx_pipeline.golden import GoldenCurve, GoldenRegistry
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.recipes import policy
from inferx_pipeline.recipes.policy.data import cached_policy
from inferx_pipeline.recipes.policy.thinking import served_thinking
from inferx_pipeline.recipes.schema import Recipe

from .conftest import ROOT

RULES = ("thinking-explicit", "golden-al-only")

# No shipped curve belongs to an always-thinking family: this one stands in for one.
DSR1_CURVE = GoldenCurve(
    name="dsr1_mtp", curve_model="dsr1", family="dsr1", method="mtp", precision="fp8",
    hardware="h200", engine="test", source_run="test", dataset="test", thinking_on={3: 2.4},
)  # fmt: skip


@pytest.fixture
def dsr1_golden() -> GoldenRegistry:
    return GoldenRegistry({"dsr1_mtp": DSR1_CURVE}, {"dsr1_mtp": ""}, Path("test"))


def _dsr1(make_recipe: Callable[..., Recipe], thinking: str | None) -> Recipe:
    model: dict[str, Any] = {
        "hf-id": "deepseek-ai/DeepSeek-R1-0528",
        "model-prefix": "dsr1",  # catalog: thinking always
        "precision": "fp8",
    }
    if thinking is not None:
        model["thinking"] = thinking
    return make_recipe(
        model=model,
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "dsr1_mtp",
        },
    )


def _minimax(make_recipe: Callable[..., Recipe], **over: Any) -> Recipe:
    doc: dict[str, Any] = {
        "model": {
            "hf-id": "MiniMaxAI/MiniMax-M3-MXFP8",
            "model-prefix": "minimaxm3",  # catalog: thinking switchable (thinking_mode)
            "precision": "fp8",
            "thinking": "on",
        },
        "sku": "mi325x",
        "speculative": {
            "method": "eagle3",
            "draft-model": "Inferact/MiniMax-M3-EAGLE3",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "minimaxm3_eagle3",
        },
    }
    return make_recipe(**(doc | over))


def _errors(recipe: Recipe, catalog: Catalog, golden: GoldenRegistry) -> list[str]:
    data = cached_policy(ROOT / "catalog")
    found = policy.check(recipe, catalog=catalog, golden=golden, data=data, rules=RULES)
    return [f.message for f in found if f.is_error]


def test_unset_on_an_always_thinking_family_runs_on_in_rules_and_matrix(
    make_recipe: Callable[..., Recipe], dsr1_golden: GoldenRegistry, catalog: Catalog
) -> None:
    recipe = _dsr1(make_recipe, None)
    assert served_thinking(recipe, catalog) == "on"
    assert _errors(recipe, catalog, dsr1_golden) == []
    jobs = expand([recipe], golden=dsr1_golden, catalog=catalog)
    assert {j.spec.target_al for j in jobs} == {2.4}  # the curve's thinking_on K=3
    assert {j.model.thinking for j in jobs} == {"on"}
    # No switch to flip: the client sends no enable_thinking for an always-thinking family.
    assert jobs[0].client.chat_template_kwargs == {}


def test_explicit_on_is_the_same_job_but_for_the_client_kwargs(
    make_recipe: Callable[..., Recipe], dsr1_golden: GoldenRegistry, catalog: Catalog
) -> None:
    unset = expand([_dsr1(make_recipe, None)], golden=dsr1_golden, catalog=catalog)[0]
    explicit = expand([_dsr1(make_recipe, "on")], golden=dsr1_golden, catalog=catalog)[0]
    assert (unset.model, unset.spec) == (explicit.model, explicit.spec)
    assert explicit.client.chat_template_kwargs == {"enable_thinking": True}


def test_off_on_an_always_thinking_family_is_rejected(
    make_recipe: Callable[..., Recipe], dsr1_golden: GoldenRegistry, catalog: Catalog
) -> None:
    assert _errors(_dsr1(make_recipe, "off"), catalog, dsr1_golden) == [
        "got 'off'; model family dsr1 always thinks: use thinking: on",
        "got thinking off; golden curve 'dsr1_mtp' was measured with thinking on only: a "
        "synthetic run must use a measured mode",
    ]


def test_client_must_send_the_kwargs_its_curve_was_measured_with(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    default = _minimax(make_recipe)  # the matrix would send enable_thinking, which MiniMax ignores
    assert _errors(default, catalog, golden) == [
        "the client would send chat-template kwargs {enable_thinking: true}; golden curve "
        "'minimaxm3_eagle3' was measured (thinking on) with {thinking_mode: enabled}: set "
        "client.chat-template-kwargs to {thinking_mode: enabled}, so the server runs the "
        "measured mode"
    ]
    raw = _minimax(make_recipe, client={"api": "completions"})
    assert _errors(raw, catalog, golden) == [
        "the client sends no chat template (client.api: completions); golden curve "
        "'minimaxm3_eagle3' was measured (thinking on) with {thinking_mode: enabled}: use "
        "client.api: chat and set client.chat-template-kwargs to {thinking_mode: enabled}, "
        "so the server runs the measured mode"
    ]
    fixed = _minimax(make_recipe, client={"chat-template-kwargs": {"thinking_mode": "enabled"}})
    assert _errors(fixed, catalog, golden) == []
    jobs = expand([fixed], golden=golden, catalog=catalog)
    assert {j.spec.target_al for j in jobs} == {2.83}  # minimaxm3_eagle3 thinking_on K=3
    assert jobs[0].client.chat_template_kwargs == {"thinking_mode": "enabled"}
    unset = _minimax(make_recipe, model={**fixed.model.model_dump(by_alias=True), "thinking": None})
    assert served_thinking(unset, catalog) is None
    assert _errors(unset, catalog, golden)[0].startswith(
        "model family minimaxm3 has a switchable thinking mode; set thinking: on"
    )


def test_unset_on_a_switchable_family_is_rejected_by_both(
    make_recipe: Callable[..., Recipe], golden: GoldenRegistry, catalog: Catalog
) -> None:
    recipe = make_recipe(
        model={
            "hf-id": "Qwen/Qwen3.5-397B-A17B-FP8",
            "model-prefix": "qwen3.5",
            "precision": "fp8",
        },
        speculative={
            "method": "mtp",
            "draft-tokens": 3,
            "acceptance": "synthetic",
            "curve": "qwen3.5_mtp",
        },
    )
    assert served_thinking(recipe, catalog) is None
    assert _errors(recipe, catalog, golden) == [
        "model family qwen3.5 has a switchable thinking mode; set thinking: on or thinking: "
        "off (the golden curves and the client depend on it)"
    ]
    with pytest.raises(GoldenCurveError, match=r"family qwen3\.5 has no fixed mode"):
        expand([recipe], golden=golden, catalog=catalog)


def test_always_thinking_jobs_record_on_unknown_families_none(
    make_recipe: Callable[..., Recipe], catalog: Catalog, golden: GoldenRegistry
) -> None:
    dsr1 = make_recipe()  # catalog: dsr1 thinking always
    assert {j.model.thinking for j in expand([dsr1], golden=golden, catalog=catalog)} == {"on"}
    unknown = make_recipe(model={"hf-id": "x/y", "model-prefix": "nope", "precision": "fp8"})
    assert served_thinking(unknown, catalog) is None
