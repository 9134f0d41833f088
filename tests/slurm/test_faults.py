"""Faults on the real cluster: a dead node, the time limit, scancel from outside, Ctrl-C, a crash.

Each fault is injected while a point is in flight (the server reports a running request),
and each test ends with ``squeue`` empty.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.slurm import SlurmLauncher
from inferx_pipeline.launch.slurm_handle import SlurmHandle
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import SweepBackend
from inferx_pipeline.sweep.report import NullProgress, SweepOptions, SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.slurm_backends import slurm_pools
from inferx_pipeline.sweep.status import load_policy
from tests.defs.conftest import Project
from tests.services.slurm_cluster import Cluster
from tests.slurm.conftest import assert_queue_drains, cluster_pool, slurm_env, write_pools
from tests.sweep.interrupt import assert_cancelled_cleanly, interrupt_after_first_point

pytestmark = pytest.mark.slurm

H200 = "qwen3.827b-fp8-h200-vllm-mtp"
SLOW_SIM = SimOptions(load_time_s=0, time_scale=0.2, startup_timeout_s=60)
SLOW = SweepOptions(num_prompts=2)
IN_FLIGHT = "vllm:num_requests_running"
FAULT_DEADLINE_S = 60.0


class TrackingLauncher:
    """The slurm launcher, keeping every handle it started (the tests aim faults at them)."""

    def __init__(self, inner: SlurmLauncher) -> None:
        self.inner = inner
        self.handles: list[SlurmHandle] = []

    def start(self, spec: ServerSpec) -> SlurmHandle:
        handle = self.inner.start(spec)
        self.handles.append(handle)
        return handle


class FaultDuring(NullProgress):
    """Calls ``fault(handle)`` once point number ``index`` (from 0) has a request in flight."""

    def __init__(
        self, index: int, launcher: TrackingLauncher, fault: Callable[[SlurmHandle], object]
    ) -> None:
        self.index = index
        self.launcher = launcher
        self.fault = fault
        self.started = 0
        self.errors: list[BaseException] = []
        self.thread: threading.Thread | None = None

    def point_started(self, job: BenchmarkJob) -> None:
        if self.started == self.index:
            self.thread = threading.Thread(target=self._inject, daemon=True)
            self.thread.start()
        self.started += 1

    def _inject(self) -> None:
        try:
            deadline = time.monotonic() + FAULT_DEADLINE_S
            while not self._in_flight():
                assert time.monotonic() < deadline, "no request in flight before the deadline"
                time.sleep(0.05)  # polling the server's /metrics, bounded by the deadline
            self.fault(self.launcher.handles[-1])
        except BaseException as err:  # re-raised by the test's thread
            self.errors.append(err)

    def _in_flight(self) -> bool:
        if not self.launcher.handles:
            return False
        try:
            running = scrape(self.launcher.handles[-1].base_url).get(IN_FLIGHT)
        except EndpointError:
            return False
        return bool(running)

    def finish(self) -> None:
        """Wait for the injecting thread; raise what it raised."""
        assert self.thread is not None, "the faulted point never started"
        self.thread.join(FAULT_DEADLINE_S)
        if self.errors:
            raise self.errors[0]


@dataclasses.dataclass
class Fixture:
    project: Project
    cluster: Cluster
    pools: Path
    store: ArtifactStore


@pytest.fixture
def faults(project: Project, slurm_cluster: Cluster, tmp_path: Path) -> Iterator[Fixture]:
    yield Fixture(project, slurm_cluster, tmp_path / "pools.yaml", ArtifactStore(tmp_path / "art"))
    assert_queue_drains(slurm_cluster)


def _jobs(project: Project, count: int) -> list[BenchmarkJob]:
    request = MatrixRequest(paths=(), selection=Selection(recipes=(H200,)))
    jobs = sorted(build_matrix(request, project.settings), key=lambda job: job.conc)
    return jobs[:count]


def _sweep(
    f: Fixture,
    jobs: list[BenchmarkJob],
    fault_at: int,
    fault: Callable[[SlurmHandle], object],
    options: SweepOptions = SLOW,
    sim: SimOptions = SLOW_SIM,
    **pool: object,
) -> tuple[SweepReport, TrackingLauncher]:
    write_pools(f.pools, **pool)
    source = slurm_pools(
        f.project.settings,
        run_id="faults",
        pools_file=f.pools,
        sim=sim,
        environ=slurm_env(f.cluster),
    )
    backend = source.for_sku(jobs[0].sku)
    assert isinstance(backend.launcher, SlurmLauncher)
    tracking = TrackingLauncher(backend.launcher)
    tracked = dataclasses.replace(backend, launcher=tracking)
    progress = FaultDuring(fault_at, tracking, fault)
    report = run_sweep(
        jobs,
        backend=_Only(tracked),
        artifacts=f.store,
        policy=load_policy(f.project.settings.catalog_dir),
        options=options,
        progress=progress,
    )
    progress.finish()
    return report, tracking


@dataclasses.dataclass(frozen=True)
class _Only:
    backend: SweepBackend

    def for_sku(self, sku: str) -> SweepBackend:
        return self.backend


def _first_attempt(store: ArtifactStore, job: BenchmarkJob) -> tuple[str, str]:
    manifest = next(m for m in store.all_attempts() if m.job_id == job.job_id and m.attempt == 1)
    return manifest.status, manifest.message


def test_a_dead_node_is_node_failed_and_the_point_reruns_on_a_fresh_allocation(
    faults: Fixture,
) -> None:
    jobs = _jobs(faults.project, 3)
    killed: list[str] = []

    def kill_node(handle: SlurmHandle) -> None:
        job = handle.job(fresh=True)
        assert job is not None
        killed.append(job.nodes)
        faults.cluster.kill_node(job.nodes)

    try:
        report, tracking = _sweep(faults, jobs, 1, kill_node)
    finally:
        for node in killed:
            faults.cluster.restart_node(node)
    assert [o.status for o in report.outcomes] == ["ok", "ok", "ok"]
    assert report.outcomes[1].attempts == (1, 2)
    status, message = _first_attempt(faults.store, jobs[1])
    assert status == "node-failed" and "ended NODE_FAIL" in message, message
    assert len({h.job_id for h in tracking.handles}) == 2
    kept = [o.result.metadata["slurm_job_id"] for o in report.outcomes if o.result is not None]
    assert len(kept) == 3 and kept[0] != kept[2] == kept[1]  # the earlier point stays


def test_scancel_from_outside_cancels_the_rest_without_a_retry(faults: Fixture) -> None:
    jobs = _jobs(faults.project, 3)
    report, tracking = _sweep(
        faults, jobs, 1, lambda h: faults.cluster.run("scancel", str(h.job_id))
    )
    assert [o.status for o in report.outcomes] == ["ok", "cancelled", "cancelled"]
    assert report.outcomes[1].attempts == (1,)
    assert "ended CANCELLED" in report.outcomes[1].message
    assert len(tracking.handles) == 1


def test_the_time_limit_ends_the_group_as_time_limit(faults: Fixture) -> None:
    # 60-90 s whatever slurm.conf says: limits are whole minutes (sbatch rounds --time=0:10
    # up to 1) and slurmctld checks them every 30 s (PERIODIC_TIMEOUT, compiled in).
    jobs = _jobs(faults.project, 2)
    crawl = SLOW_SIM.model_copy(update={"time_scale": 20.0})  # a point outlasts the limit
    report, tracking = _sweep(faults, jobs, 0, lambda h: None, sim=crawl, time_limit="1")
    assert [o.status for o in report.outcomes] == ["time-limit", "time-limit"]
    assert report.outcomes[0].attempts == (1,) and len(tracking.handles) == 1
    assert "ended TIMEOUT" in report.outcomes[0].message


def _cli_env(f: Fixture) -> dict[str, str]:
    return {
        **f.cluster.env,
        "INFERX_ROOT": str(f.project.root),
        "INFERX_STATE_DIR": str(f.project.settings.state),
    }


def _cli_args(f: Fixture, artifacts: Path) -> list[str]:
    write_pools(f.pools)
    return ["sweep", "--launcher", "slurm", "--pools", str(f.pools), "--sim-image", "inferx-sim",
            "--recipe", H200, "--artifacts-dir", str(artifacts), "--num-prompts", "1",
            "--time-scale", "0.05", "--load-time-s", "0"]  # fmt: skip


def test_ctrl_c_cancels_the_allocation(faults: Fixture, tmp_path: Path) -> None:
    artifacts = tmp_path / "cli-art"
    code, output, _ = interrupt_after_first_point(
        _cli_args(faults, artifacts), _cli_env(faults), artifacts
    )
    assert_cancelled_cleanly(code, output, artifacts)


def test_a_crashed_launcher_leaves_an_orphan_that_the_next_start_cancels(
    faults: Fixture, tmp_path: Path
) -> None:
    args = [sys.executable, "-m", "inferx_pipeline", *_cli_args(faults, tmp_path / "art")]
    proc = subprocess.Popen(args, env={**os.environ, **_cli_env(faults)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + FAULT_DEADLINE_S
        while not (jobs := faults.cluster.active_jobs()):
            assert proc.poll() is None and time.monotonic() < deadline, "no job was submitted"
            time.sleep(0.1)  # polling squeue, bounded by the deadline
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # a crash: no chance to scancel
        proc.wait()
    assert faults.cluster.active_jobs() == jobs
    launcher = SlurmLauncher(
        cluster_pool(), log_dir=tmp_path, run_id="next", environ=slurm_env(faults.cluster)
    )
    assert launcher.cleanup_orphans().stopped == tuple(jobs)


def test_an_interrupted_dagster_run_cancels_its_allocation(faults: Fixture) -> None:
    # What terminating a run does to its run worker: SIGINT, then Dagster's interrupt.
    write_pools(faults.pools)
    args = [sys.executable, "-m", "inferx_pipeline", "materialize", "--recipe", H200,
            "--launcher", "slurm", "--pools", str(faults.pools), "--sim-image", "inferx-sim",
            "--num-prompts", "1", "--time-scale", "0.05", "--load-time-s", "0",
            "--no-publish"]  # fmt: skip
    env = {**os.environ, **_cli_env(faults)}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    artifacts = faults.project.settings.artifacts_dir
    try:
        deadline = time.monotonic() + FAULT_DEADLINE_S
        while not list(artifacts.glob("attempts/*/c*/*.json")):
            assert proc.poll() is None and time.monotonic() < deadline, "no point was recorded"
            time.sleep(0.1)  # polling the artifact store, bounded by the deadline
        assert faults.cluster.active_jobs(), "the allocation should be running"
        os.killpg(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=FAULT_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, output
    assert_queue_drains(faults.cluster)
