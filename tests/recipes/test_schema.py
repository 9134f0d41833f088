"""The Recipe model's own rules and its published JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from inferx_pipeline.cli.schema import schema_text
from inferx_pipeline.recipes.extends import ExtendsResolver
from inferx_pipeline.recipes.loader import discover
from inferx_pipeline.recipes.schema import MaxNumSeqsRule, Speculative, recipe_json_schema
from inferx_pipeline.recipes.yamlsource import plain

from .conftest import LIMITS, ROOT


def test_max_num_seqs_rule() -> None:
    rule = MaxNumSeqsRule.model_validate({"per-conc": 2})
    assert [rule.for_conc(c) for c in (1, 8)] == [2, 16]
    floored = MaxNumSeqsRule.model_validate({"per-conc": 1, "floor": 16, "eval": 256})
    assert (floored.for_conc(4), floored.for_conc(64), floored.for_conc(4, is_eval=True)) == (
        16,
        64,
        256,
    )


def test_real_acceptance_may_leave_draft_tokens_to_the_engine() -> None:
    spec = Speculative.model_validate({"method": "mtp"})
    assert (spec.acceptance, spec.draft_tokens) == ("real", None)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"method": "mtp", "acceptance": "synthetic", "curve": "qwen3.5_mtp"},
            "method mtp with acceptance synthetic needs draft-tokens",
        ),
        ({"method": "eagle3", "draft-tokens": 3}, "method eagle3 needs draft-model"),
        ({"method": "mtp", "draft-tokens": 3, "acceptance": "synthetic"}, "needs curve"),
        ({"method": "none", "acceptance": "synthetic"}, "method none takes no draft-tokens"),
    ],
)
def test_speculative_consistency(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Speculative.model_validate(doc)


def test_schema_is_draft_2020_12_and_allows_extends() -> None:
    schema = recipe_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "extends" in schema["properties"]
    assert schema["additionalProperties"] is False


def test_shipped_schema_file_is_current() -> None:
    assert (ROOT / "recipes/recipe.schema.json").read_text() == schema_text()


def test_schema_accepts_every_shipped_recipe(at_root: Path) -> None:
    validator = jsonschema.Draft202012Validator(recipe_json_schema())
    resolver = ExtendsResolver(limits=LIMITS)
    found = discover([Path("recipes")])
    assert len(found.files) >= 8 and found.problems == []
    for path, tree in found.files:
        doc = plain(resolver.resolve(path, tree).root)
        errors = [e.message for e in validator.iter_errors(doc)]
        assert errors == [], path


def test_schema_rejects_a_literal_acceptance_length(at_root: Path) -> None:
    validator = jsonschema.Draft202012Validator(recipe_json_schema())
    doc = plain(
        ExtendsResolver(limits=LIMITS).resolve(Path("tests/fixtures/recipes/literal-al.yaml")).root
    )
    assert not validator.is_valid(doc)
    speculative = recipe_json_schema()["$defs"]["Speculative"]
    assert "acceptance-length" not in speculative["properties"]
    assert speculative["additionalProperties"] is False
