"""A point the client marks invalid is result-invalid with the client's reasons, never reused.

A point runs to the validity rules' minimum duration, so it ends too short only when the
client is asked for less than the rules it judges by: here the sweep passes relaxed rules
(minimum 0 s) while the client judges by the shipped ones (10 s). The sweep must say so
and measure it again next time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.bench.validity import load_rules
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.paths import ROOT
from tests.sweep.conftest import FAST, sim_backend


def _sweep(jobs: list[BenchmarkJob], store: ArtifactStore, logs: Path) -> SweepReport:
    settings = Settings()
    rules = load_rules(settings.catalog_dir / "bench-validity.yaml")
    return run_sweep(
        jobs,
        backend=sim_backend(cached_catalog(settings.catalog_dir), logs),
        artifacts=store,
        policy=load_policy(settings.catalog_dir),
        options=FAST,
        validity=rules.model_copy(update={"min_duration_s": 0.0}),
    )


def test_client_invalid_points_are_result_invalid_and_measured_again(
    few_jobs: list[BenchmarkJob], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERX_ROOT", str(ROOT))  # the client judges by the shipped rules
    store = ArtifactStore(tmp_path / "artifacts")
    first = _sweep(few_jobs[:1], store, tmp_path / "logs")
    outcome = first.outcomes[0]
    assert outcome.status == "result-invalid"
    assert "client: measured for" in outcome.message
    assert "the client was asked for 0 s only" in outcome.message
    second = _sweep(few_jobs[:1], store, tmp_path / "logs")
    assert second.outcomes[0].status == "result-invalid"  # measured again, not reused
    assert [m.attempt for m in store.attempts(few_jobs[0].fingerprint, few_jobs[0].conc)] == [1, 2]
