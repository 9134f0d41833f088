"""inferx validate across recipes: runner labels, expansion errors and identical jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.plan.build import MatrixRequest, load_matrix
from inferx_pipeline.settings import Settings
from tests.matrix.conftest import recipe_doc
from tests.paths import ROOT

SEED = ROOT / "recipes/qwen3.5/qwen3.5-fp8-mi300x-sglang-agentic-mtp.yaml"


def _write(folder: Path, name: str, doc: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _validate(*paths: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["validate", *map(str, paths)])
    errors = [line for line in result.output.splitlines() if not line.startswith("warning: ")]
    return result.exit_code, errors


@pytest.fixture
def dsr1() -> dict[str, Any]:
    doc = recipe_doc()
    doc["engine"]["gpu-memory-utilization"] = 0.95  # dsr1 FP8 TP8 on H200 fits at 0.95
    return doc


def test_identical_jobs_in_two_recipes_name_both(tmp_path: Path, dsr1: dict[str, Any]) -> None:
    first = _write(tmp_path, "a.yaml", {**dsr1, "id": "a"})
    second = _write(tmp_path, "b.yaml", {**dsr1, "id": "b"})
    code, errors = _validate(first, second)
    assert code == 1
    assert len(errors) == 6  # conc 4, 8, 16, 32, 64, 100
    assert errors[0] == (
        f"{second}:12:3: scenarios: job b/fixed-seq-len-8192x1024/tp8/c4 is identical to job "
        f"a/fixed-seq-len-8192x1024/tp8/c4 (recipe a, {first}): same fingerprint and "
        "concurrency; remove one of the rows or make them differ [duplicate-jobs]"
    )


def test_unknown_runner_label_is_an_error(tmp_path: Path, dsr1: dict[str, Any]) -> None:
    path = _write(tmp_path, "r.yaml", {**dsr1, "runner": "h200-nowhere"})
    assert _validate(path) == (
        1,
        [
            f"{path}:19:9: runner: got 'h200-nowhere'; expected a runner label of "
            "catalog/inferencex-runners.yaml (InferenceX runners.yaml): without it the job has "
            "no node facts; SKU 'h200' is assumed [runner-label]"
        ],
    )


def test_imported_recipes_say_inferencex_accepts_them(tmp_path: Path, dsr1: dict[str, Any]) -> None:
    origin = {"master": "nvidia-master.yaml", "key": "r"}
    path = _write(tmp_path, "r.yaml", {**dsr1, "runner": "h200-nowhere", "imported-from": origin})
    code, errors = _validate(path)
    assert code == 1
    assert errors[0].endswith(
        "SKU 'h200' is assumed; InferenceX accepts it (nvidia-master.yaml) [runner-label]"
    )


def test_a_recipe_that_passes_the_rules_but_does_not_expand(tmp_path: Path) -> None:
    # Runner mi300x is a known label without node facts: the DRAM arm has no budget.
    path = _write(tmp_path, "x.yaml", {"extends": str(SEED), "id": "x", "runner": "mi300x"})
    code, errors = _validate(path)
    assert code == 1
    assert len(errors) == 1
    assert errors[0].startswith(
        f"{SEED}:37:3: scenarios: runner 'mi300x': no available-cpu-dram-mib/gpus-per-node"
    )
    assert errors[0].endswith(f"[matrix] (via {path} -> {SEED})")


def test_shipped_recipes_stay_clean() -> None:
    assert _validate(ROOT / "recipes") == (0, ["OK 12 recipes"])


def test_a_repeating_recipe_loses_its_jobs_not_the_matrix(
    tmp_path: Path, dsr1: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dagster definitions' lenient load: the repeat is the second recipe's error."""
    monkeypatch.setenv("INFERX_ROOT", str(ROOT))
    first = _write(tmp_path, "a.yaml", {**dsr1, "id": "a"})
    second = _write(tmp_path, "b.yaml", {**dsr1, "id": "b"})
    other = {**dsr1, "id": "c", "scenarios": {"fixed-seq-len": [
        {**dsr1["scenarios"]["fixed-seq-len"][0], "isl": 1024, "osl": 1024}]}}  # fmt: skip
    _write(tmp_path, "c.yaml", other)
    loaded = load_matrix(MatrixRequest(paths=(tmp_path,)), Settings())
    assert {job.recipe_id for job in loaded.jobs} == {"a", "c"}
    assert {f.rule for f in loaded.recipes.errors} == {"duplicate-jobs"}
    assert {f.recipe for f in loaded.recipes.errors} == {second}
    result = CliRunner().invoke(cli, ["matrix", "--no-cache", str(first), str(second)])
    assert result.exit_code == 2
    assert (
        f"{second}:12:3: scenarios: job b/" in result.output and "[duplicate-jobs]" in result.output
    )
