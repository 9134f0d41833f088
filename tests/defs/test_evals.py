"""Eval jobs in the Dagster sweep assets: the run config's eval mode, the ``evals`` resource,
each cell's score metadata and the sweep asset's ``eval_thresholds`` check; the same job and
stored score as ``inferx sweep --evals-only``.

The H200 seed recipe gets eval policy ``smoke`` here (its highest concurrency; the shipped
policy evaluates 8k/1k only), and the policy evaluates beside throughput in mode default
too. ``FakeEvals`` scores through ``FakeHarness``; one test runs the real lm-eval.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.defs.assets import EVAL_CHECK, sweep_key
from inferx_pipeline.defs.execute import RangeRun, run_cells_in_process
from inferx_pipeline.defs.partitions import cell_key
from inferx_pipeline.defs.resources import EvalsResource
from inferx_pipeline.evals.fake import FakeHarness
from inferx_pipeline.evals.harness import Harness
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.pipeline import ingest_evals
from inferx_pipeline.sweep.artifacts import ArtifactStore
from tests.defs.conftest import FAST, H200, Project

H200_RECIPE = "qwen3.827b-fp8-h200-vllm-mtp"


class FakeEvals(EvalsResource):
    """The evals resource scoring every eval job ``exact_match`` (no lm-eval)."""

    exact_match: float

    def harness(self) -> Harness:
        return FakeHarness(self.exact_match)


def _fake(exact_match: float) -> FakeEvals:
    return FakeEvals(exact_match=exact_match, lm_eval_python=sys.executable)


def _evaluated(project: Project) -> None:
    """Give the H200 recipe eval policy ``smoke``, selecting in every mode."""
    recipe = project.root / "recipes" / H200
    recipe.write_text(recipe.read_text() + "eval:\n  policy: smoke\n")
    path = project.root / "catalog" / "eval-policy.yaml"
    doc = yaml.safe_load(path.read_text())
    modes = doc["policies"]["smoke"]["modes"]
    modes["default"] = modes["evals-only"]
    path.unlink()  # a link to the checkout's file
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _run(
    project: Project, instance: dg.DagsterInstance, evals: EvalsResource, mode: str
) -> tuple[Cell, RangeRun]:
    """Materialize the recipe's highest-concurrency cell in eval mode ``mode``."""
    cells, ladder = project.cells(H200_RECIPE)
    config = {"ops": {"sweep__h200": {"config": {"evals": mode}}}}
    defs = project.definitions(evals=evals)
    [run] = run_cells_in_process(
        defs, instance, cells[-1:], ladder, reason="test", run_config=config
    )
    return cells[-1], run


def _shown(instance: dg.DagsterInstance, cell: Cell) -> dict[str, dg.MetadataValue]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=sweep_key("h200"), asset_partitions=[str(cell_key(cell))]),
        limit=1,
    ).records
    assert records and records[0].asset_materialization is not None
    return dict(records[0].asset_materialization.metadata)


def _check(instance: dg.DagsterInstance, name: str) -> dg.AssetCheckEvaluation:
    record = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(sweep_key("h200"), name)
    )
    assert record is not None and record.evaluation is not None
    return record.evaluation


def test_a_cell_scores_its_eval_after_its_point_and_the_check_fails_below_threshold(
    project: Project, instance: dg.DagsterInstance
) -> None:
    _evaluated(project)
    cell, run = _run(project, instance, _fake(0.25), "default")
    assert (run.status, run.counts) == ("SUCCESS", {"ok": 2})
    shown = _shown(instance, cell)
    job_id = f"{H200_RECIPE}/fixed-seq-len-1024x1024/tp1-mtp/c{cell.conc}/eval"
    assert shown["eval_job"].value == job_id
    assert (shown["eval_task"].value, shown["eval_documents"].value) == ("gsm8k", 30)
    assert shown["eval_exact_match[strict-match]"].value == 0.25
    assert shown["eval_exact_match[flexible-extract]"].value == 0.25
    assert shown["eval_stderr[strict-match]"].value > 0
    assert (shown["eval_threshold"].value, shown["eval_passed"].value) == (0.9, False)
    assert shown["tok/s/GPU"].value > 0  # the throughput point of the same cell
    # GSM8K's 16,384-token context is not the point's 2,304: the eval has its own server.
    assert _check(instance, "result_sanity").metadata["server_launches"].value == 2
    check = _check(instance, EVAL_CHECK)
    assert not check.passed
    table = str(check.metadata["below_threshold"].value)
    assert f"| {job_id} | gsm8k | 0.25 | 0.9 |" in table


def test_evals_only_stores_what_inferx_sweep_and_materialize_evals_only_reuse(
    project: Project,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _evaluated(project)
    cell, run = _run(project, instance, _fake(1.0), "evals-only")
    assert (run.status, run.counts) == ("SUCCESS", {"ok": 1})  # the eval instead of the point
    assert _check(instance, EVAL_CHECK).passed
    assert "tok/s/GPU" not in _shown(instance, cell)
    monkeypatch.setenv("INFERX_LM_EVAL_PYTHON", sys.executable)
    # The launcher's settings: a stored score stands in for the same simulator and options.
    same = {
        "--time-scale": FAST.time_scale,
        "--load-time-s": FAST.load_time_s,
        "--num-prompts": FAST.num_prompts,
        "--max-turns": FAST.max_turns,
        "--think-time-scale": FAST.think_time_scale,
    }
    flags = [str(word) for pair in same.items() for word in pair]
    result = CliRunner().invoke(cli, ["sweep", "--evals-only", "--recipe", H200_RECIPE, *flags])
    assert result.exit_code == 0, result.output
    assert "reused" in result.output and "1.000" in result.output
    # inferx materialize --evals-only: the same cell through Dagster, from the command line.
    home = ["--dagster-home", str(tmp_path / "dagster"), "--no-publish"]
    materialized = CliRunner().invoke(
        cli, ["materialize", "--evals-only", "--recipe", H200_RECIPE, *flags, *home]
    )
    assert materialized.exit_code == 0, materialized.output
    assert "SUCCESS" in materialized.output and "1 reused" in materialized.output
    artifacts = ArtifactStore(project.settings.artifacts_dir)
    ingested = ingest_evals(artifacts, project.settings.results_url)
    assert ingested.written == 1  # one stored score: both commands reused the first run's


def test_the_real_lm_eval_scores_a_cell_through_dagster(
    project: Project, instance: dg.DagsterInstance, lm_eval_python: Path
) -> None:
    _evaluated(project)
    path = project.root / "catalog" / "evals.yaml"
    evals = yaml.safe_load(path.read_text())
    evals["default"]["task"] = "gsm8k-inferx"  # the shipped task: no host datasets here
    evals["protocol"]["max-tokens"] = 32
    path.unlink()
    path.write_text(yaml.safe_dump(evals, sort_keys=False))
    cell, run = _run(
        project, instance, EvalsResource(lm_eval_python=str(lm_eval_python)), "evals-only"
    )
    assert (run.status, run.counts) == ("SUCCESS", {"ok": 1})
    shown = _shown(instance, cell)
    assert (shown["eval_task"].value, shown["eval_documents"].value) == ("gsm8k-inferx", 30)
    check = _check(instance, EVAL_CHECK)
    assert check.passed == shown["eval_passed"].value
    assert check.metadata["scored_jobs"].value == 1
