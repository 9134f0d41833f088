"""``inferx validate`` and ``inferx schema`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from inferx_pipeline.cli import cli


def test_validate_shipped_recipes_ok(at_root: Path) -> None:
    result = CliRunner().invoke(cli, ["validate"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == "OK 12 recipes"
    assert all(line.startswith("warning: ") for line in lines[:-1])


def test_validate_lists_every_error_and_exits_1(at_root: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "validate",
            "tests/fixtures/recipes/wrong-types.yaml",
            "tests/fixtures/recipes/unknown-sku.yaml",
            "tests/fixtures/recipes/valid.yaml",
        ],
    )
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "tests/fixtures/recipes/wrong-types.yaml:6:12: scenarios.fixed-seq-len[0].osl: got "
        "'many'; expected a valid integer [schema]",
        "tests/fixtures/recipes/unknown-sku.yaml:3:6: sku: got 'h900'; expected a SKU of "
        "catalog/skus.yaml: b200, b300, cpu, gb200, gb300, h100, h200, mi300x, mi325x, mi355x, "
        "rtx6000pro [referential]",
    ]


def test_validate_missing_path_is_a_user_error_exit_2(at_root: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", "recipes/no-such.yaml"])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "Error: recipes/no-such.yaml: no such recipe file or directory"
    ]


def test_schema_prints_json(at_root: Path) -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["title"] == "inferx recipe"


def test_schema_writes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "recipe.schema.json"
    result = CliRunner().invoke(cli, ["schema", "--out", str(out)])
    assert result.exit_code == 0
    assert result.output == f"wrote {out}\n"
    assert json.loads(out.read_text())["type"] == "object"
