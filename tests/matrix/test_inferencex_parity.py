"""Parity: imported InferenceX recipes expand to its generator's rows; validate lists the rest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.import_defaults import ImportDefaults
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
    tmp_path: Path,
    golden: GoldenRegistry,
    catalog: Catalog,
    runners: RunnerCatalog,
    import_defaults: ImportDefaults,
) -> None:
    report = import_masters(MASTERS, tmp_path, runners, catalog, import_defaults)
    jobs = expand(
        report.recipes, golden=golden, catalog=catalog, runners=runners, duplicates="keep"
    )
    assert len(jobs) == 2078
    assert inferencex_rows(jobs) == json.loads(EXPECTED.read_text())  # same order too


def test_import_reports_what_our_checks_reject(
    tmp_path: Path, catalog: Catalog, runners: RunnerCatalog, import_defaults: ImportDefaults
) -> None:
    report = import_masters(MASTERS, tmp_path, runners, catalog, import_defaults)
    messages = [f.message for f in report.findings]
    assert any("'cluster:mi325x-tw' is not in InferenceX's runners.yaml" in m for m in messages)
    assert any("agentic arm without speculative decoding" in m for m in messages)
    duplicates = [m for m in messages if "is identical to" in m]
    # 5 rows InferenceX emits twice, plus one multinode conc-list that repeats a concurrency
    assert len(duplicates) == 6
    assert any(m.startswith("qwen3.5-fp8-b300-sglang-agentic-power-ab:") for m in duplicates)
    assert all(f.severity == "warning" for f in report.findings)


def _rules(lines: list[str]) -> Counter[str]:
    return Counter(line.rsplit("[", 1)[-1].split("]")[0] for line in lines)


def test_validate_lists_what_inferencex_accepts_and_we_reject(imported: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(imported)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    errors = [line for line in lines if not line.startswith("warning: ")]
    rules = _rules(errors)
    # Every spec-decoding row has a consistent speculative block and every family is known.
    assert "referential" not in rules
    assert rules["runner-label"] == 8
    assert rules["duplicate-jobs"] == 6
    # 21 arms above the grid or without speculative decoding, and 2 grids with steps of 1
    # (glm5.2 and minimaxm3 on mi325x run 1, 2, ...; the agentic MTP policy steps by >= 2).
    assert rules["agentic-spec-decoding"] == 23
    mi325x = [e for e in errors if "[runner-label]" in e and "dsv4-fp8-mi325x-vllm.yaml" in e]
    assert mi325x == [
        f"{imported}/dsv4-fp8-mi325x-vllm.yaml:8:9: runner: got 'cluster:mi325x-tw'; expected a "
        "runner label of catalog/inferencex-runners.yaml (InferenceX runners.yaml): without it "
        "the job has no node facts; SKU 'mi325x' is assumed; InferenceX accepts it "
        "(amd-master.yaml) [runner-label]"
    ]
    duplicates = [e for e in errors if "[duplicate-jobs]" in e]
    assert sum("-power-ab.yaml:" in e for e in duplicates) == 5
    assert all("; InferenceX accepts it (" in e for e in duplicates)
    agentic = [e for e in errors if "[agentic-spec-decoding]" in e]
    assert all("; InferenceX runs it (" in e for e in agentic)
    thinking = [e for e in errors if "[thinking-explicit]" in e]
    assert thinking and all("which states no thinking mode" in e for e in thinking)


def test_imported_speculative_blocks(imported: Path) -> None:
    mtp = yaml.safe_load((imported / "dsr1-fp4-b200-dynamo-sglang-mtp.yaml").read_text())
    assert mtp["speculative"] == {"method": "mtp", "acceptance": "real"}
    assert mtp["imported-from"] == {
        "master": "nvidia-master.yaml",
        "key": "dsr1-fp4-b200-dynamo-sglang-mtp",
    }
    hicache = yaml.safe_load(
        (imported / "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp.yaml").read_text()
    )
    assert hicache["speculative"]["draft-tokens"] == 3  # every decode worker: DECODE_MTP_SIZE=3
    plain = yaml.safe_load((imported / "dsr1-fp8-h200-sglang.yaml").read_text())
    assert "speculative" not in plain
