"""InferenceX entry -> recipe: the speculative block a row implies and the chain InferenceX's
launch scripts add (catalog/inferencex-import.yaml), arms, provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from inferx_pipeline.errors import CatalogError, RecipeSchemaError
from inferx_pipeline.matrix.import_defaults import (
    ImportDefaults,
    SpeculativeChain,
    load_import_defaults,
)
from inferx_pipeline.matrix.inferencex import entry_to_recipe, read_master, speculative_block
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import INFERENCEX, ROOT

SGLANG_314 = {"draft-tokens": 3, "topk": 1, "verify-tokens": 4}


def _entry(*rows: dict[str, Any], **over: str) -> dict[str, Any]:
    return over | {
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


def test_rows_without_an_arm_say_none_under_a_speculative_block(
    runners: RunnerCatalog, import_defaults: ImportDefaults
) -> None:
    entry = _entry(
        {"tp": 8, "conc-list": [4]},
        {"tp": 8, "conc-list": [4], "spec-decoding": "mtp"},
    )
    doc = entry_to_recipe(
        "dsr1-fp8-h200-sglang", entry, runners, import_defaults, "nvidia-master.yaml"
    )
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


def _master_entry(master: str, key: str) -> dict[str, Any]:
    return read_master(INFERENCEX / "configs" / master)[key]


@pytest.mark.parametrize(
    ("master", "key", "chain"),
    [
        # SGLang asserts topk 1 for DeepSeek-V4 EAGLE; InferenceX's scripts pass the chain.
        ("nvidia-master.yaml", "dsv4-fp8-h200-sglang-mtp", SGLANG_314),
        ("amd-master.yaml", "dsv4-fp4-mi355x-sglang-agentic-mtp", SGLANG_314),
        ("nvidia-master.yaml", "qwen3.5-fp8-b200-sglang-mtp", SGLANG_314),
        ("nvidia-master.yaml", "glm5.2-fp4-b300-sglang-agentic-mtp", SGLANG_314),
        # One config's own chain wins over its family's (PR 2570: 5 steps).
        (
            "amd-master.yaml",
            "glm5.2-fp4-mi355x-sglang-agentic-mtp",
            {"draft-tokens": 5, "topk": 1, "verify-tokens": 6},
        ),
        # The rows' own DECODE_MTP_SIZE=3 wins; verify-tokens follows as 3 + 1 with topk 1.
        (
            "amd-master.yaml",
            "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp",
            {"draft-tokens": 3, "topk": 1, "verify-tokens": 4},
        ),
        # Rows state draft lengths 1 and 2: the recipe's one block keeps topk only.
        ("amd-master.yaml", "dsv4-fp4-mi355x-sglang-disagg-mtp", {"topk": 1}),
        # No chain stated for the family: the engine's default chain.
        ("nvidia-master.yaml", "dsr1-fp8-h200-sglang-mtp", {}),
        ("nvidia-master.yaml", "dsv4-fp4-gb200-dynamo-sglang-mtp", {}),
    ],
)
def test_imported_entries_carry_the_chain_inferencex_launch_scripts_pass(
    master: str,
    key: str,
    chain: dict[str, int],
    runners: RunnerCatalog,
    import_defaults: ImportDefaults,
) -> None:
    doc = entry_to_recipe(key, _master_entry(master, key), runners, import_defaults, master)
    assert doc["speculative"] == {"method": "mtp", "acceptance": "real", **chain}
    spec = Recipe.model_validate(doc).speculative
    assert (spec.draft_tokens, spec.topk, spec.verify_tokens) == (
        chain.get("draft-tokens"),
        chain.get("topk"),
        chain.get("verify-tokens"),
    )


def test_a_stated_draft_length_without_topk_1_leaves_verify_tokens_to_the_engine() -> None:
    chain = SpeculativeChain(draft_tokens=3, topk=2, verify_tokens=6, source="test")
    block = speculative_block(_entry(_multinode(2), _multinode(2)), chain)
    assert block == {"method": "mtp", "acceptance": "real", "draft-tokens": 2, "topk": 2}


def test_the_shipped_chains_name_their_source(import_defaults: ImportDefaults) -> None:
    chains = [c for fam in import_defaults.families.values() for c in fam.values()]
    chains += import_defaults.configs.values()
    assert chains and all("PR " in chain.source for chain in chains)


def test_a_chain_whose_verify_tokens_break_topk_1_is_a_catalog_error(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "catalog" / "inferencex-import.yaml").read_text())
    data["families"]["sglang"]["dsv4"]["verify_tokens"] = 5
    (tmp_path / "inferencex-import.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(
        CatalogError,
        match=r"(?s)inferencex-import\.yaml: invalid InferenceX import defaults: .*"
        r"families\.sglang\.dsv4\n.*verify_tokens: got 5; "
        r"expected draft_tokens \+ 1 = 4 with topk 1",
    ):
        load_import_defaults(tmp_path)
