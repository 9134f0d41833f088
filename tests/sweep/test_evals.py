"""Eval jobs in a sweep: scored on the group's own server after its points, stored, refused.

The simulator serves; ``FakeHarness`` stands in for lm-eval (it writes the harness's files
at a chosen score), so these tests take seconds. lm-eval itself runs in tests/evals and
once through ``inferx sweep`` on the real vLLM (tests/sweep/test_cli_evals.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.evals.fake import FakeHarness
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.matrix.eval_catalog import load_eval_catalog
from inferx_pipeline.matrix.evals import eval_job
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.pipeline import ingest_evals
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.results.evals import read_evals
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import (
    EVAL_HARNESS,
    EVAL_LOG,
    EVAL_RESULT,
    EVAL_SAMPLES,
    RESULT,
    SERVER_SPEC,
    ArtifactStore,
)
from inferx_pipeline.sweep.console import summary_table
from inferx_pipeline.sweep.evaluate import EvalSetup
from inferx_pipeline.sweep.groups import group_jobs
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.sweep.conftest import FAST, sim_backend

# Default evals: c32 and c64 evaluated; no speculative decoding, but GSM8K needs a 16,384-token
# context (catalog/evals.yaml) where the 8k/1k points serve 9,472: the evals get a server of
# their own, and are judged as their throughput twin's configuration.
RAISED = "dsr1-fp8-mi300x-sglang"
# Agentic MTP at the golden AL: its eval twins verify for real, on servers of their own.
SYNTHETIC = "minimaxm3-fp8-mi325x-vllm-agentic-mtp"


def _jobs(recipe: str, evals: str) -> list[BenchmarkJob]:
    request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe,)), evals=evals)
    return build_matrix(request, Settings())


def _setup(harness: FakeHarness, tmp_path: Path) -> EvalSetup:
    catalog = load_eval_catalog(Settings().catalog_dir)
    return EvalSetup(catalog, harness, Path(sys.executable), tmp_path / "hf-home")


def _sweep(
    jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore, policy: SweepPolicy,
    tmp_path: Path, evals: EvalSetup | None,
) -> SweepReport:  # fmt: skip
    backend = sim_backend(catalog, tmp_path / "logs")
    return run_sweep(jobs, backend=backend, artifacts=store, policy=policy, options=FAST,
                     evals=evals)  # fmt: skip


def _shared_pair() -> list[BenchmarkJob]:
    """RAISED's c64 point and its eval twin under a protocol whose max-length (8,192) fits
    the point's context: the eval's server is the point's."""
    settings = Settings()
    point = _jobs(RAISED, "none")[-1]
    evals = load_eval_catalog(settings.catalog_dir)
    fitting = evals.protocol.model_copy(update={"max_length": 8192})
    evals = evals.model_copy(update={"protocol": fitting})
    return [point, eval_job(point, evals=evals, catalog=cached_catalog(settings.catalog_dir))]


def test_evals_join_their_twins_server_unless_acceptance_or_context_differs() -> None:
    (shared,) = group_jobs(_shared_pair())
    assert len(shared.points) == 1 and len(shared.evals) == 1
    raised = group_jobs(_jobs(RAISED, "default"))
    assert [g.concurrencies for g in raised] == [(4, 8, 16, 32, 64), (32, 64)]
    assert raised[1].spec_job.max_model_len == 16384 and len(raised[1].evals) == 2
    synthetic = _jobs(SYNTHETIC, "default") + _jobs(SYNTHETIC, "evals-only")
    alone = [g for g in group_jobs(synthetic) if g.evals]
    assert [(len(g.points), len(g.evals), g.name.endswith("/eval")) for g in alone] == [
        (0, 1, True)
    ]


def test_an_eval_runs_after_the_points_on_the_same_server_and_is_stored(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, tmp_path: Path
) -> None:
    jobs = [j for j in _jobs(RAISED, "default") if j.conc == 64]  # c64 and its eval twin
    harness = FakeHarness(0.25)
    report = _sweep(jobs, catalog, store, policy, tmp_path, _setup(harness, tmp_path))
    assert report.counts() == {"ok": 2} and report.server_launches == 2  # the eval's context
    point, evaluated = report.outcomes
    assert evaluated.eval is not None and evaluated.result is None
    scored = evaluated.eval
    assert (scored.task, scored.passed, scored.threshold, scored.exact_match) == (
        "gsm8k", False, 0.91, 0.25,
    )  # fmt: skip
    assert scored.metadata["fingerprint"] == jobs[1].fingerprint
    assert scored.metadata["image_digest"] == point.result.metadata["image_digest"]  # type: ignore[union-attr]
    shown = Console(record=True, width=300)
    shown.print(summary_table(report))
    assert "0.250 < 0.91" in shown.export_text()  # the CLI's summary shows the score
    [run] = harness.runs
    assert run.config["model_args"]["num_concurrent"] == 64
    assert run.config["model_args"]["base_url"].startswith("http://127.0.0.1:")
    manifest = evaluated.manifest
    assert manifest is not None and RESULT not in manifest.artifacts
    assert {EVAL_RESULT, EVAL_SAMPLES, EVAL_HARNESS, EVAL_LOG, SERVER_SPEC} <= set(
        manifest.artifacts
    )
    stored = EvalResult.model_validate_json(store.read(manifest.artifacts[EVAL_RESULT]))
    assert stored.metadata[f"artifact:{EVAL_SAMPLES}"] == manifest.artifacts[EVAL_SAMPLES]
    samples = store.read(manifest.artifacts[EVAL_SAMPLES]).decode().splitlines()
    assert len(samples) == 60 and json.loads(samples[0])["filter"] == "strict-match"

    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    first, again = ingest_evals(store, url), ingest_evals(store, url)  # idempotent
    assert (first.written, again.written, again.skipped_existing) == (1, 0, 1)
    results = ResultStore(url)
    try:
        [row] = read_evals(results).to_dict("records")
    finally:
        results.close()
    assert row["server_fingerprint"] == jobs[0].fingerprint  # the throughput twin's identity
    assert (row["fingerprint"], row["exact_match"], row["passed"]) == (
        jobs[1].fingerprint, 0.25, False,
    )  # fmt: skip
    assert row["samples_sha256"] == manifest.artifacts[EVAL_SAMPLES]


def test_an_eval_that_fits_runs_after_the_point_on_its_server(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, tmp_path: Path
) -> None:
    jobs = _shared_pair()
    report = _sweep(jobs, catalog, store, policy, tmp_path, _setup(FakeHarness(0.5), tmp_path))
    assert report.counts() == {"ok": 2} and report.server_launches == 1
    point, evaluated = report.outcomes
    assert point.result is not None and evaluated.eval is not None


def test_a_second_sweep_reuses_the_score(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, tmp_path: Path
) -> None:
    jobs = [j for j in _jobs(RAISED, "evals-only") if j.conc == 32]
    setup = _setup(FakeHarness(1.0), tmp_path)
    first = _sweep(jobs, catalog, store, policy, tmp_path, setup)
    again = _sweep(jobs, catalog, store, policy, tmp_path, setup)
    assert first.counts() == {"ok": 1} and again.counts() == {"reused": 1}
    assert again.server_launches == 0 and again.outcomes[0].eval == first.outcomes[0].eval


@pytest.mark.parametrize("with_setup", [True, False])
def test_synthetic_acceptance_is_refused_before_a_server_starts(
    catalog: Catalog, store: ArtifactStore, policy: SweepPolicy, tmp_path: Path, with_setup: bool
) -> None:
    throughput = _jobs(SYNTHETIC, "none")[0]
    assert throughput.spec.acceptance == "synthetic"
    forged = throughput.evolve(run_eval=True)  # an eval job left at the golden AL
    setup = _setup(FakeHarness(1.0), tmp_path) if with_setup else None
    report = _sweep([forged], catalog, store, policy, tmp_path, setup)
    [outcome] = report.outcomes
    assert report.server_launches == 0
    if with_setup:
        assert outcome.status == "eval-refused"
        assert "synthetic acceptance" in outcome.message
    else:
        assert outcome.status == "eval-failed"
        assert outcome.message.endswith("this sweep has no lm-eval (its log says why)")
