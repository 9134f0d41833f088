"""Eval parity: --evals, --evals-only and --all-evals rows equal InferenceX's generator's.

The default and evals-only rows are compared with its expected files; the all-evals rows
with the README's statement of that mode, applied to its no-evals rows.
"""

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
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.evals import EvalMode, load_eval_policies
from inferx_pipeline.matrix.expand import expand
from inferx_pipeline.matrix.import_defaults import ImportDefaults
from inferx_pipeline.matrix.inferencex import import_masters
from inferx_pipeline.matrix.inferencex_rows import inferencex_rows
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.paths import INFERENCEX, ROOT

MASTERS = [
    INFERENCEX / "configs" / "amd-master.yaml",
    INFERENCEX / "configs" / "nvidia-master.yaml",
]
EXPECTED = INFERENCEX / "expected"
# Fields that tell rows of one multinode parallelism apart besides their concurrencies.
_NOT_PARALLELISM = {"conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs"}


def _multiset(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(row, sort_keys=True) for row in rows)


def _expected(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((EXPECTED / f"full-sweep-{name}.json").read_text())
    return rows


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    result = CliRunner().invoke(cli, ["import-inferencex", *map(str, MASTERS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _rows(imported: Path, flag: str) -> list[dict[str, Any]]:
    args = ["matrix", str(imported), "--no-policy", "--allow-duplicates", flag]
    result = CliRunner().invoke(cli, [*args, "--format", "inferencex"])
    assert result.exit_code == 0, result.output[-2000:]
    rows: list[dict[str, Any]] = json.loads(result.output)
    return rows


@pytest.mark.parametrize(
    ("flag", "expected", "count", "evals"),
    [("--evals", "default", 1820, 519), ("--evals-only", "evals-only", 645, 645)],
)
def test_rows_equal_inferencex_generator(
    imported: Path, flag: str, expected: str, count: int, evals: int
) -> None:
    ours, theirs = _rows(imported, flag), _expected(expected)
    assert len(ours) == len(theirs) == count
    assert sum(row["run-eval"] for row in ours) == evals
    missing, extra = _multiset(theirs) - _multiset(ours), _multiset(ours) - _multiset(theirs)
    assert not missing and not extra, (list(missing)[:2], list(extra)[:2])


@pytest.mark.parametrize("mode", ["default", "evals-only"])
def test_in_memory_rows_in_generator_order(
    tmp_path: Path,
    golden: GoldenRegistry,
    catalog: Catalog,
    runners: RunnerCatalog,
    import_defaults: ImportDefaults,
    mode: EvalMode,
) -> None:
    report = import_masters(MASTERS, tmp_path, runners, catalog, import_defaults)
    policies = load_eval_policies(ROOT / "catalog")
    jobs = expand(
        report.recipes,
        golden=golden,
        catalog=catalog,
        runners=runners,
        evals=mode,
        eval_policies=policies,
        eval_catalog=cached_eval_catalog(ROOT / "catalog"),
        duplicates="keep",
    )
    rows = inferencex_rows(jobs, evals=mode, eval_only=policies.eval_only(mode))
    assert rows == _expected(mode)  # field for field, in the generator's order


def _parallelism(row: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in _NOT_PARALLELISM}, sort_keys=True)


def _all_evals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The README's --all-evals, applied to the generator's no-evals rows."""
    out: list[dict[str, Any]] = []
    merged: dict[str, dict[str, Any]] = {}
    for source in rows:
        row = {**source, "run-eval": True, "eval-only": True}
        agentic, fixed_8k1k = "isl" not in row, (row.get("isl"), row.get("osl")) == (8192, 1024)
        if "prefill" not in row:
            if agentic or fixed_8k1k:
                out.append(row)
            continue
        if not (agentic or fixed_8k1k):
            continue  # other sequence lengths stay throughput-only: dropped
        key = _parallelism(row)
        if key in merged:
            merged[key]["conc"] = sorted({*merged[key]["conc"], *row["conc"]})
        else:
            merged[key] = row
            out.append(row)
            row["conc"] = sorted(set(row["conc"]))
        merged[key].update({"eval-conc": max(merged[key]["conc"])} if agentic else {})
        merged[key].update({} if agentic else {"eval-all-concs": True})
    return out


def test_all_evals_rows_follow_the_readme(imported: Path) -> None:
    ours, theirs = _rows(imported, "--all-evals"), _all_evals(_expected("no-evals"))
    assert len(ours) == len(theirs) == 1663
    assert sum(row.get("eval-all-concs", False) for row in ours) == 375
    missing, extra = _multiset(theirs) - _multiset(ours), _multiset(ours) - _multiset(theirs)
    assert not missing and not extra, (list(missing)[:2], list(extra)[:2])


def _eval_points(row: dict[str, Any]) -> list[tuple[str, ...]]:
    concs = row["conc"] if row.get("eval-all-concs") else [row.get("eval-conc", row["conc"])]
    head = (row["model"], row["runner"], row["framework"], row["precision"])
    return [(*head, row.get("scenario-type", "fixed-seq-len"), str(conc)) for conc in concs]


@pytest.mark.parametrize(
    ("evals", "flag"), [("evals-only", "--evals-only"), ("all", "--all-evals")]
)
def test_eval_only_jobs_are_the_rows_eval_points(imported: Path, evals: str, flag: str) -> None:
    request = MatrixRequest.model_validate(
        {"paths": (imported,), "evals": evals, "policy": False, "allow_duplicates": True}
    )
    jobs = build_matrix(request, Settings())  # what inferx sweep --evals-only/--all-evals runs
    assert jobs and all(job.run_eval for job in jobs)
    ours = Counter(
        (j.model.hf_id, j.runner, j.engine.framework, j.model.precision, j.scenario, str(j.conc))
        for j in jobs
    )
    points = Counter(point for row in _rows(imported, flag) for point in _eval_points(row))
    assert ours == points
