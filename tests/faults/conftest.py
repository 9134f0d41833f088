"""Fixtures of the fault tests: a smoke project root, and a small real simulated sweep.

Each fault test damages or interrupts real files and processes; the sweep it starts from
is measured once per session on simulator child processes and copied per test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runner import run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.engines.jobs import recipe_jobs
from tests.smoke import smoke_root
from tests.sweep.conftest import FAST, SEED, sim_backend

POINTS = 3  # one server group, three concurrencies


@pytest.fixture(scope="session")
def fault_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return smoke_root(tmp_path_factory.mktemp("faults") / "root")


@pytest.fixture(autouse=True)
def _smoke_env(fault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Millisecond points are valid under the smoke catalog (see tests/smoke.py).
    monkeypatch.setenv("INFERX_ROOT", str(fault_root))


@pytest.fixture(scope="session")
def few_jobs() -> list[BenchmarkJob]:
    return sorted(recipe_jobs(SEED), key=lambda job: job.conc)[:POINTS]


@pytest.fixture(scope="session")
def _swept_once(
    fault_root: Path, few_jobs: list[BenchmarkJob], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    base = tmp_path_factory.mktemp("swept")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("INFERX_ROOT", str(fault_root))
        settings = Settings()
        report = run_sweep(
            few_jobs,
            backend=sim_backend(cached_catalog(settings.catalog_dir), base / "logs"),
            artifacts=ArtifactStore(base / "artifacts"),
            policy=load_policy(settings.catalog_dir),
            options=FAST,
        )
    assert [o.status for o in report.outcomes] == ["ok"] * POINTS, report.outcomes
    return base / "artifacts"


@pytest.fixture
def swept(_swept_once: Path, tmp_path: Path) -> ArtifactStore:
    """A copy of a finished three-point sweep's artifact directory, free to damage."""
    return ArtifactStore(Path(shutil.copytree(_swept_once, tmp_path / "artifacts")))
