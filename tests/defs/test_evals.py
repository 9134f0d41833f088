"""Eval jobs in the Dagster sweep assets: the run config's eval mode, the ``evals`` resource,
each cell's score metadata and the sweep asset's ``eval_thresholds`` check; the same job and
stored score as ``inferx sweep --evals-only``.

The H200 seed recipe gets eval policy ``smoke`` here (its highest concurrency; the shipped
policy evaluates 8k/1k only), and the policy evaluates beside throughput in mode default
too. ``FakeEvals`` scores through ``FakeHarness``. The real lm-eval scores the shipped task
(``gsm8k-inferx``, at the family's threshold 0.9) on simulators answering from its answer
key: all of it right (1.0, passing) through Dagster and ``inferx sweep --evals-only``,
every second question (0.5 with lm-eval's standard error, failing) through the latter.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.cli import cli
from inferx_pipeline.defs.assets import EVAL_CHECK, NORMALIZED_RESULTS, sweep_key
from inferx_pipeline.defs.execute import RangeRun, publish_in_process, run_cells_in_process
from inferx_pipeline.defs.partitions import cell_key
from inferx_pipeline.defs.resources import EvalsResource, LauncherResource
from inferx_pipeline.engines.sim import SimAdapter, SimOptions
from inferx_pipeline.errors import EvalError
from inferx_pipeline.evals.fake import FakeHarness
from inferx_pipeline.evals.harness import Harness
from inferx_pipeline.evals.invocation import DATA_DIR
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.partitions import Cell
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.pipeline import ingest_evals
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import EVAL_HARNESS, EVAL_RESULT, EVAL_SAMPLES, ArtifactStore
from inferx_pipeline.sweep.evaluate import EvalSetup
from inferx_pipeline.sweep.launchers import LauncherChoice
from tests.defs.conftest import FAST, H200, SMALL, Project

H200_RECIPE = "qwen3.827b-fp8-h200-vllm-mtp"
# The shipped task's test split: the simulator's answer key.
ANSWER_KEY = DATA_DIR / "gsm8k-inferx-test.jsonl"
DOCUMENTS = 30
FILTERS = ("strict-match", "flexible-extract")


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


def _shipped_task(project: Project) -> None:
    """Evaluate the default family on the shipped task (no host datasets here), 32-token
    answers (the filler the simulator says to the questions it does not answer right)."""
    path = project.root / "catalog" / "evals.yaml"
    evals = yaml.safe_load(path.read_text())
    evals["default"]["task"] = "gsm8k-inferx"
    evals["protocol"]["max-tokens"] = 32
    path.unlink()  # a link to the checkout's file
    path.write_text(yaml.safe_dump(evals, sort_keys=False))


def _run(
    project: Project,
    instance: dg.DagsterInstance,
    evals: EvalsResource,
    mode: str,
    launcher: LauncherResource = FAST,
) -> tuple[Cell, RangeRun]:
    """Materialize the recipe's highest-concurrency cell in eval mode ``mode``."""
    cells, ladder = project.cells(H200_RECIPE)
    defs = project.definitions(evals=evals, launcher=launcher)
    [run] = run_cells_in_process(
        defs, instance, cells[-1:], ladder, reason="test", sweep={**SMALL, "evals": mode}
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
    # Scored on the simulator: below threshold as expected, a warning that says so.
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert check.description is not None and "all simulated" in check.description
    table = str(check.metadata["below_threshold"].value)
    assert f"| {job_id} | gsm8k | 0.25 | 0.9 | yes |" in table


class NoLmEval(EvalsResource):
    """The evals resource of a host where lm-eval cannot be had."""

    def setup(self, settings: Settings) -> EvalSetup:
        raise EvalError("scripts/lm-eval-env: cannot provide lm-eval (no index here)")


def test_without_lm_eval_the_point_is_measured_and_its_eval_fails_with_a_status(
    project: Project, instance: dg.DagsterInstance
) -> None:
    _evaluated(project)
    _, run = _run(project, instance, NoLmEval(), "default")
    assert (run.status, run.counts) == ("FAILURE", {"ok": 1, "eval-failed": 1})
    store = ArtifactStore(project.settings.state_dir / "artifacts")
    statuses = {m.job_id.endswith("/eval"): (m.status, m.message) for m in store.all_attempts()}
    assert statuses[False][0] == "ok"
    assert statuses[True][0] == "eval-failed" and "no lm-eval" in statuses[True][1]


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
    # The run's settings: a stored score stands in for the same simulator and options.
    same = {
        "--time-scale": FAST.time_scale,
        "--load-time-s": FAST.load_time_s,
        "--num-prompts": SMALL["num_prompts"],
        "--max-turns": SMALL["max_turns"],
        "--think-time-scale": SMALL["think_time_scale"],
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


def _check_of_results(instance: dg.DagsterInstance) -> dg.AssetCheckEvaluation:
    record = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(NORMALIZED_RESULTS, EVAL_CHECK)
    )
    assert record is not None and record.evaluation is not None
    return record.evaluation


def test_the_real_lm_eval_scores_a_cell_through_dagster(
    project: Project, instance: dg.DagsterInstance, lm_eval_python: Path
) -> None:
    _evaluated(project)
    _shipped_task(project)
    answering = LauncherResource(**{**FAST.model_dump(), "answer_key": str(ANSWER_KEY)})
    evals = EvalsResource(lm_eval_python=str(lm_eval_python))
    cell, run = _run(project, instance, evals, "evals-only", answering)
    assert (run.status, run.counts) == ("SUCCESS", {"ok": 1})
    shown = _shown(instance, cell)
    assert (shown["eval_task"].value, shown["eval_documents"].value) == ("gsm8k-inferx", 30)
    for name in FILTERS:  # every gold answer, right under both filters
        assert (shown[f"eval_exact_match[{name}]"].value, shown[f"eval_stderr[{name}]"].value) == (
            1.0, 0.0,
        )  # fmt: skip
    assert (shown["eval_threshold"].value, shown["eval_passed"].value) == (0.9, True)
    check = _check(instance, EVAL_CHECK)
    assert check.passed and check.metadata["scored_jobs"].value == 1


def _sweep(project: Project, share: float) -> tuple[EvalResult, dict[str, bytes]]:
    """``inferx sweep --evals-only`` on simulators answering ``share`` of the answer key
    right: the stored eval document, and the attempt's artifacts by name."""
    flags = ["--time-scale", "0.02", "--load-time-s", "0", "--sim-answer-key", str(ANSWER_KEY)]
    flags += ["--sim-answer-share", str(share)]
    result = CliRunner().invoke(cli, ["sweep", "--evals-only", "--recipe", H200_RECIPE, *flags])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("1 jobs: 1 ok"), result.output
    store = ArtifactStore(project.settings.artifacts_dir)
    newest = max(store.all_attempts(), key=lambda manifest: manifest.finished_at)
    artifacts = {name: store.read(sha) for name, sha in newest.artifacts.items()}
    return EvalResult.model_validate_json(artifacts[EVAL_RESULT]), artifacts


def test_inferx_sweep_scores_the_answer_key_and_the_threshold_check_judges_it(
    project: Project,
    instance: dg.DagsterInstance,
    lm_eval_python: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _evaluated(project)
    _shipped_task(project)
    monkeypatch.setenv("INFERX_LM_EVAL_PYTHON", str(lm_eval_python))
    right, _ = _sweep(project, 1.0)
    assert [(f.filter, f.exact_match, f.stderr) for f in right.filters] == [
        (name, 1.0, 0.0) for name in FILTERS
    ]
    assert (right.n_effective, right.threshold, right.passed) == (DOCUMENTS, 0.9, True)
    assert publish_in_process(project.definitions(), instance).success
    check = _check_of_results(instance)
    assert check.passed and check.metadata["scored_configurations"].value == 1

    half, artifacts = _sweep(project, 0.5)  # another simulator digest: a configuration apart
    assert [(f.filter, f.exact_match) for f in half.filters] == [(n, 0.5) for n in FILTERS]
    harness = json.loads(artifacts[EVAL_HARNESS])["results"]["gsm8k_inferx"]
    stderrs = [f.stderr for f in half.filters]
    assert stderrs == [harness[f"exact_match_stderr,{name}"] for name in FILTERS]
    # lm-eval's standard error of the mean: sqrt(p (1 - p) / (n - 1)).
    assert stderrs == [pytest.approx(math.sqrt(0.5 * 0.5 / (DOCUMENTS - 1)), rel=1e-12)] * 2
    samples = [json.loads(line) for line in artifacts[EVAL_SAMPLES].splitlines()]
    for name in FILTERS:  # every second question, from the second, as the key answers
        right_docs = {s["doc_id"] for s in samples if s["filter"] == name and s["exact_match"]}
        assert right_docs == set(range(1, DOCUMENTS, 2))
    assert (half.threshold, half.passed) == (0.9, False)
    assert publish_in_process(project.definitions(), instance).success
    check = _check_of_results(instance)
    assert not check.passed and check.metadata["scored_configurations"].value == 2
    table = str(check.metadata["below_threshold"].value)
    job_id = str(half.metadata["job_id"])
    assert f"| {job_id} | gsm8k-inferx | 0.5 | 0.9 |" in table and table.count(job_id) == 1


def test_the_answer_key_rides_from_the_launcher_settings_to_the_simulators_argv(
    project: Project,
) -> None:
    sim = SimOptions(answer_key=ANSWER_KEY, answer_share=0.5)
    choice = LauncherChoice(sim=sim)
    resource = LauncherResource.of(choice)  # what `inferx materialize` passes
    assert resource.choice() == choice
    request = MatrixRequest(paths=(), selection=Selection(recipes=(H200_RECIPE,)))
    job = build_matrix(request, project.settings)[-1]
    assert job.parallel is not None
    argv = SimAdapter(sim).argv(job, job.parallel)
    assert argv[-4:] == ["--answer-key", str(ANSWER_KEY), "--answer-share", "0.5"]
    refused = CliRunner().invoke(cli, ["sweep", "--evals-only", "--sim-answer-share", "0.5"])
    assert refused.exit_code == 2
    assert refused.output.splitlines()[-1] == (
        "Error: simulator flags: Value error, answer_share needs answer_key (--sim-answer-key)"
    )
