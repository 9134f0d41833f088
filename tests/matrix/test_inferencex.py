"""InferenceX entry -> recipe: the speculative block a row implies, arms, provenance."""

from __future__ import annotations

from typing import Any

import pytest

from inferx_pipeline.errors import RecipeSchemaError
from inferx_pipeline.matrix.inferencex import entry_to_recipe, speculative_block
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes.schema import Recipe


def _entry(*rows: dict[str, Any]) -> dict[str, Any]:
    return {
        "image": "lmsysorg/sglang:v0.5.12-cu130",
        "model": "deepseek-ai/DeepSeek-R1-0528",
        "model-prefix": "dsr1",
        "runner": "h200",
        "precision": "fp8",
        "framework": "sglang",
        "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": list(rows)}]},
    }


def _multinode(size: int | None) -> dict[str, Any]:
    decode: dict[str, Any] = {"num-worker": 1, "tp": 8}
    if size is not None:
        decode["additional-settings"] = ["X=1", f"DECODE_MTP_SIZE={size}"]
    return {
        "spec-decoding": "mtp",
        "prefill": {"num-worker": 1, "tp": 8},
        "decode": decode,
        "conc-list": [4],
    }


def test_a_row_naming_a_method_gets_real_acceptance_without_draft_tokens() -> None:
    entry = _entry({"tp": 8, "conc-list": [4], "spec-decoding": "mtp"})
    assert speculative_block(entry) == {"method": "mtp", "acceptance": "real"}


def test_no_method_no_block() -> None:
    assert speculative_block(_entry({"tp": 8, "conc-list": [4], "spec-decoding": "none"})) is None


@pytest.mark.parametrize(
    ("sizes", "draft_tokens"),
    [((3, 3), 3), ((1, 3), None), ((3, None), None), ((0, 0), None)],
)
def test_draft_tokens_only_where_every_decode_worker_states_the_same(
    sizes: tuple[int | None, ...], draft_tokens: int | None
) -> None:
    block = speculative_block(_entry(*(_multinode(s) for s in sizes)))
    assert block is not None and block.get("draft-tokens") == draft_tokens


def test_two_methods_in_one_entry_are_an_error() -> None:
    entry = _entry(
        {"tp": 8, "conc-list": [4], "spec-decoding": "mtp"},
        {"tp": 8, "conc-list": [4], "spec-decoding": "eagle"},
    )
    with pytest.raises(RecipeSchemaError, match="rows name speculative methods eagle, mtp"):
        speculative_block(entry)


def test_rows_without_an_arm_say_none_under_a_speculative_block(runners: RunnerCatalog) -> None:
    entry = _entry(
        {"tp": 8, "conc-list": [4]},
        {"tp": 8, "conc-list": [4], "spec-decoding": "mtp"},
    )
    doc = entry_to_recipe("dsr1-fp8-h200-sglang", entry, runners, "nvidia-master.yaml")
    rows = doc["scenarios"]["fixed-seq-len"][0]["search-space"]
    assert [row["spec-decoding"] for row in rows] == ["none", "mtp"]
    assert "spec-decoding" not in entry["scenarios"]["fixed-seq-len"][0]["search-space"][0]
    recipe = Recipe.model_validate(doc)
    assert recipe.imported_from is not None
    assert (recipe.imported_from.master, recipe.imported_from.key) == (
        "nvidia-master.yaml",
        "dsr1-fp8-h200-sglang",
    )
    assert recipe.speculative.method == "mtp" and recipe.speculative.draft_tokens is None
