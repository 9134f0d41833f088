"""Parity: recipes imported from both InferenceX master files expand to its generator's rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.inferencex_rows import inferencex_rows
from inferx_pipeline.matrix.runners import RunnerCatalog
from tests.paths import INFERENCEX

MASTERS = [
    INFERENCEX / "configs" / "amd-master.yaml",
    INFERENCEX / "configs" / "nvidia-master.yaml",
]
EXPECTED = INFERENCEX / "expected" / "full-sweep-no-evals.json"


def _multiset(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(row, sort_keys=True) for row in rows)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    result = CliRunner().invoke(cli, ["import-inferencex", *map(str, MASTERS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.endswith(f"imported 208 recipes into {out}\n")
    return out


def test_cli_rows_equal_inferencex_generator(imported: Path) -> None:
    args = ["matrix", str(imported), "--no-policy", "--allow-duplicates", "--format", "inferencex"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output[-2000:]
    ours = json.loads(result.output)
    expected = json.loads(EXPECTED.read_text())
    assert len(ours) == len(expected) == 1820
    points = sum(len(r["conc"]) if isinstance(r["conc"], list) else 1 for r in ours)
    assert points == 2078
    missing, extra = _multiset(expected) - _multiset(ours), _multiset(ours) - _multiset(expected)
    assert not missing and not extra, (list(missing)[:2], list(extra)[:2])


def test_in_memory_import_matches_row_order(
    tmp_path: Path, golden: GoldenRegistry, catalog: Catalog, runners: RunnerCatalog
) -> None:
    report = import_masters(MASTERS, tmp_path, runners, catalog)
    jobs = expand(
        report.recipes, golden=golden, catalog=catalog, runners=runners, duplicates="keep"
    )
    assert len(jobs) == 2078
    assert inferencex_rows(jobs) == json.loads(EXPECTED.read_text())  # same order too


def test_import_reports_what_our_checks_reject(
    tmp_path: Path, catalog: Catalog, runners: RunnerCatalog
) -> None:
    report = import_masters(MASTERS, tmp_path, runners, catalog)
    messages = [f.message for f in report.findings]
    assert any("'cluster:mi325x-tw' is not in InferenceX's runners.yaml" in m for m in messages)
    assert any("agentic arm without speculative decoding" in m for m in messages)
    duplicates = [m for m in messages if "is identical to" in m]
    # 5 rows InferenceX emits twice, plus one multinode conc-list that repeats a concurrency
    assert len(duplicates) == 6
    assert any(m.startswith("qwen3.5-fp8-b300-sglang-agentic-power-ab:") for m in duplicates)
    assert all(f.severity == "warning" for f in report.findings)
