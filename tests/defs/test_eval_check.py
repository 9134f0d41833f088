"""The eval-threshold check on ``normalized_results``: publish ingests eval scores and the
check fails, with the score and threshold, on a configuration below its threshold; a
damaged eval document shows as quarantined in the materialization's metadata."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.assets import EVAL_CHECK, NORMALIZED_RESULTS
from inferx_pipeline.defs.execute import publish_in_process
from inferx_pipeline.evals.fake import FakeHarness
from inferx_pipeline.matrix.eval_catalog import load_eval_catalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.sweep.artifacts import EVAL_RESULT, ArtifactStore
from inferx_pipeline.sweep.backends import simulator_backend
from inferx_pipeline.sweep.evaluate import EvalSetup
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.defs.conftest import Project
from tests.sweep.conftest import FAST, FAST_SIM

BF16_RECIPE = "qwen3.827b-bf16-mi325x-vllm-mtp"


def _scored(project: Project, exact_match: float) -> tuple[BenchmarkJob, ArtifactStore]:
    """Score the BF16 recipe's first eval job at ``exact_match`` (simulated server, fake
    harness); the job and the artifact store holding its attempt."""
    settings = project.settings
    request = MatrixRequest(paths=(), selection=Selection(recipes=(BF16_RECIPE,)))
    evals = load_eval_catalog(settings.catalog_dir)
    catalog = cached_catalog(settings.catalog_dir)
    job = eval_job(build_matrix(request, settings)[0], evals=evals, catalog=catalog)
    setup = EvalSetup(evals, FakeHarness(exact_match), Path(sys.executable), settings.state / "hf")
    backend = simulator_backend(catalog, settings.state / "logs", FAST_SIM)
    store = ArtifactStore(settings.artifacts_dir)
    report = run_sweep([job], backend=backend, artifacts=store, options=FAST,
                       policy=load_policy(settings.catalog_dir), evals=setup)  # fmt: skip
    assert report.counts() == {"ok": 1}
    return job, store


def test_a_score_below_threshold_fails_the_check_with_score_and_threshold(
    project: Project, instance: dg.DagsterInstance
) -> None:
    job, _ = _scored(project, 0.25)

    result = publish_in_process(project.definitions(), instance)
    assert result.success
    record = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(NORMALIZED_RESULTS, EVAL_CHECK)
    )
    assert record is not None and record.evaluation is not None
    assert record.evaluation.passed is False
    table = record.evaluation.metadata["below_threshold"].value
    assert f"| {job.job_id} | gsm8k | 0.25 | 0.9 |" in str(table)


def test_a_damaged_eval_document_shows_as_quarantined(
    project: Project, instance: dg.DagsterInstance
) -> None:
    job, store = _scored(project, 1.0)
    [manifest] = store.all_attempts()
    blob = store.path(manifest.artifacts[EVAL_RESULT])
    blob.write_bytes(blob.read_bytes()[:-10])  # cut short: its bytes no longer hash to its name

    assert publish_in_process(project.definitions(), instance).success
    records = instance.fetch_materializations(NORMALIZED_RESULTS, limit=1).records
    assert records and records[0].asset_materialization is not None
    shown = records[0].asset_materialization.metadata
    assert (shown["eval_written"].value, shown["eval_quarantined"].value) == (0, 1)
    table = str(shown["eval_quarantine"].value)
    assert f"| {blob} | damaged-artifact | job {job.job_id}: artifact {blob} is corrupt" in table
