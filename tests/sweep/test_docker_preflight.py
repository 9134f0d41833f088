"""Image preflight in a real Docker sweep: rules on real images, facts cached by digest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.launch.preflight import FactCache
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import docker_backend
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import SweepPolicy
from tests.engines.jobs import recipe_jobs
from tests.services.docker_engine import DockerEngine
from tests.sweep.conftest import FAST, policy_data
from tests.sweep.test_docker_sweep import OPTIONS
from tests.sweep.test_image_policy import AGENTIC_SGLANG

pytestmark = pytest.mark.docker


def _agentic_points() -> list[BenchmarkJob]:
    """The first two concurrencies of the agentic SGLang seed's first server group."""
    jobs = recipe_jobs(AGENTIC_SGLANG)
    return [j for j in jobs if j.server_key == jobs[0].server_key][:2]


def _sweep(
    engine: DockerEngine, image: str, catalog: Catalog, policy: SweepPolicy, tmp: Path, name: str
) -> SweepReport:
    sim = SimOptions(image=image, load_time_s=0.2, time_scale=0.001, startup_timeout_s=60)
    backend = docker_backend(
        engine.client, catalog, run_id=f"preflight-{name}", log_dir=tmp / name / "logs",
        facts=FactCache.under(tmp / "state"), policy=policy_data(), docker_options=OPTIONS,
        sim=sim,
    )  # fmt: skip
    store = ArtifactStore(tmp / name / "artifacts")
    return run_sweep(_agentic_points(), backend=backend, artifacts=store, policy=policy,
                     options=FAST, run_id=f"preflight-{name}")  # fmt: skip


def _containers_created(engine: DockerEngine, since: float) -> list[dict[str, Any]]:
    """Container-create events since ``since`` (Unix s; the API filters by whole seconds)."""
    events = engine.client.events(
        since=int(since) - 1, until=int(time.time()) + 1, decode=True,
        filters={"type": "container", "event": "create"},
    )  # fmt: skip
    return [e for e in events if e["timeNano"] >= since * 1e9]


def test_python_3_11_image_passes_and_the_facts_are_cached(
    docker_engine: DockerEngine, sim_image: str, catalog: Catalog, policy: SweepPolicy,
    tmp_path: Path,
) -> None:  # fmt: skip
    report = _sweep(docker_engine, sim_image, catalog, policy, tmp_path, "pass")
    assert [o.status for o in report.outcomes] == ["ok", "ok"], report.outcomes
    digest = docker_engine.client.images.get(sim_image).id
    cached = json.loads(FactCache.under(tmp_path / "state").path.read_text())
    assert cached[digest]["python_version"]["value"] == "3.11.2"
    result = report.outcomes[0].result
    assert result is not None and result.metadata["engine_version"] == "inferx-sim-0.1.0"


def test_python_3_10_image_fails_the_group_then_hits_the_cache(
    docker_engine: DockerEngine, old_python_image: str, catalog: Catalog, policy: SweepPolicy,
    tmp_path: Path,
) -> None:  # fmt: skip
    first_started = time.time()
    first = _sweep(docker_engine, old_python_image, catalog, policy, tmp_path, "first")
    assert [o.status for o in first.outcomes] == ["image-preflight-failed"] * 2
    assert first.outcomes[0].message.startswith(
        f"image {old_python_image}: python 3.10.12; agentic recipes need >= 3.11, < 3.14 "
        "(rule image-facts); image digest sha256:"
    )
    assert first.server_launches == 0
    probes = _containers_created(docker_engine, first_started)
    assert len(probes) == 2  # python and engine version; no server container
    assert all("inferx.preflight" in e["Actor"]["Attributes"] for e in probes)

    second_started = time.time()
    second = _sweep(docker_engine, old_python_image, catalog, policy, tmp_path, "second")
    assert [o.status for o in second.outcomes] == ["image-preflight-failed"] * 2
    assert second.outcomes[0].message == first.outcomes[0].message
    assert _containers_created(docker_engine, second_started) == []
