"""Server lifecycle and the runner on real simulator processes and the fake launcher.

One test per failure class, plus the happy path: one server for all concurrencies,
reuse on a second run, and a dead point retried once on a fresh server.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from pathlib import Path

from inferx_pipeline.bench.result import RawResult
from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import LaunchError, PreflightError
from inferx_pipeline.launch.fake import FakeHandle, FakeLauncher, FakeScript
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import (
    METRICS_AFTER,
    METRICS_BEFORE,
    RESULT,
    SERVER_LOG,
    SERVER_SPEC,
    ArtifactStore,
)
from inferx_pipeline.sweep.backends import SweepBackend
from inferx_pipeline.sweep.report import SweepOptions, SweepReport
from inferx_pipeline.sweep.reuse import FixedDigests
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.engines.jobs import with_spec
from tests.sweep.conftest import FAST, sim_backend


def _sweep(
    jobs: list[BenchmarkJob],
    backend: SweepBackend,
    store: ArtifactStore,
    policy: SweepPolicy,
    **options: object,
) -> SweepReport:
    return run_sweep(jobs, backend=backend, artifacts=store, policy=policy,
                     options=FAST.model_copy(update=options))  # fmt: skip


def _fake_backend(backend: SweepBackend, script: FakeScript, **spec: object) -> SweepBackend:
    """``backend``'s specs, served by the fake launcher running ``script``."""
    specs = backend.specs
    return dataclasses.replace(
        backend,
        launcher=FakeLauncher(script),
        specs=lambda job: specs(job).model_copy(update=spec),
        digests=FixedDigests("sha256:fake"),
    )


def test_one_server_for_every_concurrency_then_reuse(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    jobs = seed_jobs[:3]
    backend = sim_backend(catalog, tmp_path / "logs")
    report = _sweep(jobs, backend, store, policy)
    assert [o.status for o in report.outcomes] == ["ok"] * 3, report.outcomes
    assert report.server_launches == 1 and report.groups == 1
    results = report.results()
    assert [r.max_concurrency for r in results] == [1, 2, 4]
    assert results[0].metadata["job_id"] == jobs[0].job_id
    assert results[0].metadata["simulated"] is True
    manifest = report.outcomes[0].manifest
    assert manifest is not None
    assert {RESULT, SERVER_LOG, METRICS_BEFORE, METRICS_AFTER, SERVER_SPEC} <= set(
        manifest.artifacts
    )
    assert b"INFERX_SIM_LISTENING" in store.read(manifest.artifacts[SERVER_LOG])

    again = _sweep(jobs, backend, store, policy)
    assert [o.status for o in again.outcomes] == ["reused"] * 3
    assert again.server_launches == 0 and again.results() == results

    forced = _sweep(jobs[:1], backend, store, policy, force=True)
    assert forced.outcomes[0].status == "ok" and forced.outcomes[0].attempts == (2,)


def test_dead_point_is_retried_once_on_a_fresh_server(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    # 1024 tokens per point: the first point fits under 1500, the second crosses it,
    # and on a fresh server the retried point fits again.
    backend = sim_backend(catalog, tmp_path / "logs", crash_after_tokens=1500)
    report = _sweep(seed_jobs[:2], backend, store, policy)
    first, second = report.outcomes
    assert first.status == "ok" and first.attempts == (1,)
    assert second.status == "ok" and second.attempts == (1, 2)
    assert report.server_launches == 2
    dead = store.attempts(seed_jobs[1].fingerprint, seed_jobs[1].conc)[0]
    assert dead.status == "server-exited" and dead.exit_code not in (None, 0)


def test_server_that_keeps_dying_is_server_exited_with_its_log(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = sim_backend(catalog, tmp_path / "logs", crash_after_tokens=100)
    report = _sweep(seed_jobs[:1], backend, store, policy)
    (outcome,) = report.outcomes
    assert outcome.status == "server-exited" and outcome.attempts == (1, 2)
    assert outcome.exit_code == 1 and report.server_launches == 2
    assert any("crash" in line for line in outcome.log_tail)


def test_injected_errors_exceed_the_client_error_rate(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = sim_backend(catalog, tmp_path / "logs", error_rate=0.5)
    report = _sweep(seed_jobs[:1], backend, store, policy, num_prompts=8)
    assert report.outcomes[0].status == "client-error-rate-exceeded"
    assert "requests failed" in report.outcomes[0].message


def test_acceptance_off_the_golden_target_is_result_invalid(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    # The server is told AL 1.5 while the job's golden target is 2.51.
    backend = sim_backend(catalog, tmp_path / "logs")
    specs = backend.specs
    skewed = dataclasses.replace(backend, specs=lambda job: specs(with_spec(job, target_al=1.5)))
    report = _sweep(seed_jobs[:1], skewed, store, policy, num_prompts=2)  # > al_min_drafts
    assert report.outcomes[0].status == "result-invalid"
    assert "off the target 2.51" in report.outcomes[0].message
    # The client found nothing wrong; the stored result carries the sweep's verdict.
    manifest = report.outcomes[0].manifest
    assert manifest is not None
    stored = RawResult.model_validate_json(store.read(manifest.artifacts[RESULT]))
    assert not stored.valid
    assert any(r.startswith("result-invalid: ") for r in stored.invalid_reasons), stored


def test_health_never_ready(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = _fake_backend(sim_backend(catalog, tmp_path), FakeScript(healthy=False),
                            startup_timeout_s=0.5)  # fmt: skip
    report = _sweep(seed_jobs[:2], backend, store, policy)
    assert [o.status for o in report.outcomes] == ["health-never-ready"] * 2
    assert report.server_launches == 1  # the group gives up: a second start would fail alike


def test_server_start_timeout_when_nothing_ever_listens(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = sim_backend(catalog, tmp_path / "logs")
    specs = backend.specs
    silent = (sys.executable, "-c", "import time; print('loading', flush=True); time.sleep(60)")
    mute = dataclasses.replace(
        backend,
        specs=lambda job: specs(job).model_copy(update={"argv": silent, "startup_timeout_s": 1}),
    )
    report = _sweep(seed_jobs[:1], mute, store, policy)
    (outcome,) = report.outcomes
    assert outcome.status == "server-start-timeout"
    assert outcome.log_tail == ("loading",)


def test_server_killed_while_loading_is_server_exited_137(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    script = FakeScript(healthy=False, exit_after_s=0, exit_code=137, log_lines=("OOM",))
    backend = _fake_backend(sim_backend(catalog, tmp_path), script)
    (outcome,) = _sweep(seed_jobs[:1], backend, store, policy).outcomes
    assert (outcome.status, outcome.exit_code) == ("server-exited", 137)
    assert "OOM" in outcome.log_tail


class _InterruptedStart(FakeLauncher):
    """Ctrl-C (or a cancelled Dagster run) arrives while the server starts."""

    def start(self, spec: ServerSpec) -> FakeHandle:
        raise KeyboardInterrupt


def test_an_interrupt_while_the_server_starts_gives_its_attempt_back(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    backend = dataclasses.replace(sim_backend(catalog, tmp_path), launcher=_InterruptedStart())
    report = _sweep(seed_jobs[:2], backend, store, policy)
    assert [o.status for o in report.outcomes] == ["cancelled"] * 2
    job = seed_jobs[0]
    # Nothing reserved is left behind: the next run's attempt is the first.
    assert list(store.root.glob("attempts/*/*/*.pending")) == []
    assert store.begin_attempt(job.fingerprint, job.conc) == 1


def test_preflight_failure_fails_the_group_before_any_start(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    def preflight(job: BenchmarkJob, spec: ServerSpec) -> None:
        raise PreflightError(f"{spec.image}: python 3.10.12; expected >= 3.11")

    backend = dataclasses.replace(_fake_backend(sim_backend(catalog, tmp_path), FakeScript()),
                                  preflight=preflight)  # fmt: skip
    report = _sweep(seed_jobs[:2], backend, store, policy)
    assert [o.status for o in report.outcomes] == ["image-preflight-failed"] * 2
    assert report.server_launches == 0
    assert report.outcomes[0].message.endswith("python 3.10.12; expected >= 3.11")


def test_fail_fast_cancels_the_rest_and_failures_do_not_stop_others(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    broken = seed_jobs[0].evolve(label="other", isl=512)  # a second server group
    good = _fake_backend(sim_backend(catalog, tmp_path), FakeScript())
    specs = good.specs

    def build(job: BenchmarkJob) -> ServerSpec:
        if job.label == "other":
            raise LaunchError(f"{job.job_id}: no adapter")
        return specs(job)

    backend = dataclasses.replace(good, specs=build)
    keep_going = _sweep([broken, *seed_jobs[:1]], backend, store, policy, num_prompts=1)
    assert keep_going.outcomes[0].status == "launch-failed"
    assert keep_going.outcomes[1].status != "cancelled"
    fast = _sweep([broken, *seed_jobs[:1]], backend, store, policy, fail_fast=True)
    assert [o.status for o in fast.outcomes] == ["launch-failed", "cancelled"]


def test_a_canary_that_fails_cancels_the_rest_and_one_that_passes_does_not(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    broken = seed_jobs[0].evolve(label="other", isl=512)  # a second server group
    good = sim_backend(catalog, tmp_path)
    specs = good.specs

    def build(job: BenchmarkJob) -> ServerSpec:
        if job.label == "other":
            raise LaunchError(f"{job.job_id}: no adapter")
        return specs(job)

    backend = dataclasses.replace(good, specs=build)
    run = functools.partial(run_sweep, backend=backend, artifacts=store, policy=policy,
                            options=FAST)  # fmt: skip
    failed = run([broken, *seed_jobs[:2]], canary=broken)
    assert [o.status for o in failed.outcomes] == ["launch-failed", "cancelled", "cancelled"]
    assert failed.server_launches == 0
    assert failed.outcomes[1].message == f"the canary {broken.job_id} ended launch-failed"
    # A good canary, then a failure past it: the rest goes on (fail_fast is off).
    passed = run([seed_jobs[0], broken, seed_jobs[1]], canary=seed_jobs[0])
    assert [o.status for o in passed.outcomes] == ["ok", "launch-failed", "ok"]


def test_a_set_cancel_event_cancels_everything(
    seed_jobs: list[BenchmarkJob], catalog: Catalog, store: ArtifactStore,
    policy: SweepPolicy, tmp_path: Path,
) -> None:  # fmt: skip
    cancel = threading.Event()
    cancel.set()
    backend = _fake_backend(sim_backend(catalog, tmp_path), FakeScript())
    report = run_sweep(seed_jobs[:2], backend=backend, artifacts=store, policy=policy,
                       options=SweepOptions(), cancel=cancel)  # fmt: skip
    assert [o.status for o in report.outcomes] == ["cancelled"] * 2
    assert report.server_launches == 0
