"""A real sweep through the Docker launcher: the private dockerd and the simulator image.

GPU access blocks for NVIDIA and AMD SKUs are asserted on the docker-py arguments in
``tests/launch`` (no GPU exists here); these tests run the simulator image without one.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.bench.prometheus import scrape
from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.errors import EndpointError
from inferx_pipeline.launch.docker_args import (
    LABEL_FINGERPRINT,
    LABEL_JOB,
    LABEL_RUN,
    DockerOptions,
)
from inferx_pipeline.launch.preflight import FactCache
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import SERVER_LOG, ArtifactStore
from inferx_pipeline.sweep.backends import docker_backend
from inferx_pipeline.sweep.report import JobOutcome, NullProgress
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.services.docker_engine import DockerEngine
from tests.sweep.conftest import FAST, policy_data

pytestmark = pytest.mark.docker

# This machine's dockerd lacks CAP_SYS_RESOURCE: memlock can go no higher than our own limit.
MEMLOCK = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
OPTIONS = DockerOptions(pull="never", grace_s=5, shm_size="256m", memlock_bytes=MEMLOCK)


KILL_DEADLINE_S = 30.0


def _kill_mid_request(container: Any) -> None:
    """SIGKILL ``container`` once its server has a request running (poll with a deadline)."""
    args = container.attrs["Args"]
    url = f"http://127.0.0.1:{args[args.index('--port') + 1]}"
    deadline = time.monotonic() + KILL_DEADLINE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(EndpointError):
            if (scrape(url, timeout_s=1).get("vllm:num_requests_running") or 0) >= 1:
                container.kill()
                return
        time.sleep(0.002)  # polling the server's /metrics, bounded by the deadline


class ContainerWatch(NullProgress):
    """Looks at the run's containers as each point starts; optionally kills one mid-point."""

    def __init__(self, engine: DockerEngine, run_id: str, kill_at_conc: int | None = None):
        self.engine, self.run_id, self.kill_at_conc = engine, run_id, kill_at_conc
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.killer: threading.Thread | None = None

    def containers(self) -> list[Any]:
        found: list[Any] = self.engine.client.containers.list(
            all=True, filters={"label": f"{LABEL_RUN}={self.run_id}"}
        )
        return found

    def point_started(self, job: BenchmarkJob) -> None:
        for container in self.containers():
            self.seen.append((container.id, dict(container.labels)))
            if job.conc == self.kill_at_conc:
                self.killer = threading.Thread(target=_kill_mid_request, args=(container,))
                self.killer.start()
                self.kill_at_conc = None


def _sweep(
    engine: DockerEngine, image: str, catalog: Catalog, tmp: Path, policy: SweepPolicy,
    jobs: list[BenchmarkJob], watch_kill: int | None = None, time_scale: float = 0.001,
) -> tuple[list[JobOutcome], ContainerWatch, int, ArtifactStore]:  # fmt: skip
    run_id = f"sweep-test-{tmp.name[-20:]}"
    sim = SimOptions(image=image, load_time_s=0.2, time_scale=time_scale, startup_timeout_s=60)
    backend = docker_backend(engine.client, catalog, run_id=run_id, log_dir=tmp / "logs",
                             facts=FactCache(tmp / "facts.json"), policy=policy_data(),
                             docker_options=OPTIONS, sim=sim)  # fmt: skip
    watch = ContainerWatch(engine, run_id, watch_kill)
    store = ArtifactStore(tmp / "artifacts")
    report = run_sweep(jobs, backend=backend, artifacts=store, policy=policy, options=FAST,
                       progress=watch, run_id=run_id)  # fmt: skip
    return list(report.outcomes), watch, report.server_launches, store


def test_one_container_serves_every_concurrency(
    docker_engine: DockerEngine, sim_image: str, catalog: Catalog, tmp_path: Path,
    policy: SweepPolicy, seed_jobs: list[BenchmarkJob],
) -> None:  # fmt: skip
    outcomes, watch, launches, _ = _sweep(
        docker_engine, sim_image, catalog, tmp_path, policy, seed_jobs
    )
    assert [o.status for o in outcomes] == ["ok"] * len(seed_jobs), outcomes
    assert launches == 1
    # Seen as each later point starts (the first point starts before its server does).
    assert len({cid for cid, _ in watch.seen}) == 1 and len(watch.seen) == len(seed_jobs) - 1
    labels = watch.seen[0][1]
    assert labels[LABEL_RUN] == watch.run_id
    assert labels[LABEL_FINGERPRINT] == seed_jobs[0].server_key
    assert labels[LABEL_JOB] == f"{seed_jobs[0].recipe_id}/{seed_jobs[0].scenario_label}/tp1-mtp"
    assert labels["inferx.simulated"] == "true"
    assert watch.containers() == []


def test_killed_container_is_server_exited_then_retried_on_a_fresh_one(
    docker_engine: DockerEngine, sim_image: str, catalog: Catalog, tmp_path: Path,
    policy: SweepPolicy, seed_jobs: list[BenchmarkJob],
) -> None:  # fmt: skip
    jobs = seed_jobs[:3]
    outcomes, watch, launches, store = _sweep(
        docker_engine, sim_image, catalog, tmp_path, policy, jobs, watch_kill=jobs[1].conc,
        time_scale=0.05,  # a point long enough (about 1 s) to be killed in the middle
    )  # fmt: skip
    assert watch.killer is not None
    watch.killer.join(KILL_DEADLINE_S)
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"]
    assert outcomes[1].attempts == (1, 2) and launches == 2
    dead = store.attempts(jobs[1].fingerprint, jobs[1].conc)[0]
    assert (dead.status, dead.exit_code) == ("server-exited", 137)
    assert b"INFERX_SIM_LISTENING" in store.read(dead.artifacts[SERVER_LOG])
    assert len({cid for cid, _ in watch.seen}) == 2
    assert watch.containers() == []
