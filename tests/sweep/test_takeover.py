"""A pull request's points are its own; the official run after the merge takes them over
unchanged (no server started), and a PR run takes over official points the same way."""

from __future__ import annotations

from pathlib import Path

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.pipeline import ingest_report
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.report import PullRef, SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.sweep.conftest import FAST, sim_backend

PULL = PullRef(number=12, head_sha="0123456789abcdef0123456789abcdef01234567")
MEASURED = ["tput_per_gpu", "intvty_median", "ttft_median_s", "num_requests"]


def _sweep(
    jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore, policy: SweepPolicy,
    logs: Path, run_id: str, pull: PullRef | None = None,
) -> SweepReport:  # fmt: skip
    return run_sweep(
        jobs, backend=sim_backend(catalog, logs), artifacts=store, policy=policy, options=FAST,
        run_id=run_id, pull=pull,
    )  # fmt: skip


def _rows(
    report: SweepReport, store: ArtifactStore, results: ResultStore, catalog: Catalog
) -> None:
    ingest_report(report, store, results, ImportContext.from_catalog(catalog))


def test_the_merge_run_promotes_the_prs_points_without_measuring(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    jobs = seed_jobs[:3]
    results = ResultStore(f"sqlite:///{tmp_path / 'results.db'}")
    pr = _sweep(jobs, catalog, store, policy, tmp_path / "logs", "pr-run", PULL)
    assert [o.status for o in pr.outcomes] == ["ok"] * 3 and pr.pull == PULL
    _rows(pr, store, results, catalog)
    assert results.read_frame().empty  # nothing official yet

    merged = _sweep(jobs, catalog, store, policy, tmp_path / "logs", "merge-run")
    assert merged.server_launches == 0
    assert [o.status for o in merged.outcomes] == ["reused"] * 3
    for outcome in merged.outcomes:
        assert outcome.manifest is not None
        assert (outcome.manifest.run_id, outcome.manifest.pr_number) == ("merge-run", None)
        assert outcome.manifest.measured_in == "pr-run"
        assert "taken over unchanged from PR #12 pr-run" in outcome.message
    _rows(merged, store, results, catalog)

    official = results.read_frame().sort_values("conc")
    unofficial = results.read_frame(ResultFilter(pull_requests="only")).sort_values("conc")
    assert official["run_id"].unique().tolist() == ["merge-run"]
    assert official["measured_in"].unique().tolist() == ["pr-run"]
    assert official["pr_number"].isna().all()
    assert unofficial[["run_id", "pr_number", "head_sha"]].drop_duplicates().values.tolist() == [
        ["pr-run", 12, PULL.head_sha]
    ]
    assert unofficial["measured_in"].isna().all()
    # The same measurement on both sides: promotion copies, it does not re-measure.
    assert official[MEASURED].values.tolist() == unofficial[MEASURED].values.tolist()

    again = _sweep(jobs, catalog, store, policy, tmp_path / "logs", "nightly")
    # Official after official: plain reuse of the promoted attempts, no third copy.
    assert all(o.message.startswith("reused attempt") for o in again.outcomes)
    results.close()


def test_a_pr_run_takes_over_official_points_as_its_own(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    jobs = seed_jobs[:2]
    _sweep(jobs, catalog, store, policy, tmp_path / "logs", "official")
    pr = _sweep(jobs, catalog, store, policy, tmp_path / "logs", "pr-run", PULL)
    assert pr.server_launches == 0
    for outcome in pr.outcomes:
        assert outcome.manifest is not None and outcome.result is not None
        assert (outcome.manifest.pr_number, outcome.manifest.measured_in) == (12, "official")
        assert outcome.result.metadata["pr_number"] == 12
        assert outcome.result.metadata["run_id"] == "pr-run"
        assert "taken over unchanged from the official run official" in outcome.message
