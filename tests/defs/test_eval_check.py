"""The eval-threshold check on ``normalized_results``: publish ingests eval scores; a
configuration below its threshold warns when its score is simulated (expected: the
simulator does not answer as a model) and fails when a real engine scored it, with the
score and threshold; a damaged eval document shows as quarantined in the
materialization's metadata."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.defs.assets import EVAL_CHECK, NORMALIZED_RESULTS
from inferx_pipeline.defs.execute import publish_in_process
from inferx_pipeline.evals.fake import FakeHarness
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.eval_catalog import load_eval_catalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.results.eval_record import eval_record
from inferx_pipeline.results.evals import write_evals
from inferx_pipeline.results.store import ResultStore
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


def _evaluation(instance: dg.DagsterInstance) -> dg.AssetCheckEvaluation:
    record = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(NORMALIZED_RESULTS, EVAL_CHECK)
    )
    assert record is not None and record.evaluation is not None
    return record.evaluation


def _stored_as_real(project: Project, store: ArtifactStore) -> None:
    """Store the recorded score again, newer, as a real engine's (what a GPU run stores)."""
    [manifest] = store.all_attempts()
    doc = EvalResult.model_validate_json(store.path(manifest.artifacts[EVAL_RESULT]).read_bytes())
    meta = {**doc.metadata, "simulated": False, "run_id": "a-real-engine-run"}
    real = doc.model_copy(update={"metadata": meta, "finished_at": doc.finished_at + 1})
    results = ResultStore(project.settings.results_url)
    try:
        assert write_evals(results, [eval_record(real, "e" * 64)]).written == 1
    finally:
        results.close()


def test_a_simulated_score_below_threshold_warns_and_a_real_one_fails(
    project: Project, instance: dg.DagsterInstance
) -> None:
    job, store = _scored(project, 0.25)

    assert publish_in_process(project.definitions(), instance).success
    simulated = _evaluation(instance)
    assert simulated.passed is False and simulated.severity == dg.AssetCheckSeverity.WARN
    assert simulated.description is not None
    assert "all simulated: expected" in simulated.description
    table = str(simulated.metadata["below_threshold"].value)
    assert f"| {job.job_id} | gsm8k | 0.25 | 0.9 | yes |" in table

    _stored_as_real(project, store)
    assert publish_in_process(project.definitions(), instance).success
    real = _evaluation(instance)
    assert real.passed is False and real.severity == dg.AssetCheckSeverity.ERROR
    assert real.description == "1 eval score(s) of a real engine below threshold."
    assert f"| {job.job_id} | gsm8k | 0.25 | 0.9 | no |" in str(
        real.metadata["below_threshold"].value
    )


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
