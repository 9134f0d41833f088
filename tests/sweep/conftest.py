"""Fixtures for the sweep tests: seed-recipe jobs, fast simulator backends, a fresh store."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.engines.sim import SimOptions
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.policy.data import PolicyData, cached_policy
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.backends import SweepBackend, simulator_backend
from inferx_pipeline.sweep.report import SweepOptions
from inferx_pipeline.sweep.status import SweepPolicy, load_policy
from tests.engines.jobs import recipe_jobs
from tests.smoke import smoke_root

SEED = "qwen3.827b-bf16-mi325x-vllm-mtp"  # 8 jobs, one group, synthetic AL 2.51
FAST_SIM = SimOptions(load_time_s=0, time_scale=0.001, startup_timeout_s=60)
FAST = SweepOptions(num_prompts=1, think_time_scale=0, max_turns=1)


@pytest.fixture(scope="session")
def _smoke_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return smoke_root(tmp_path_factory.mktemp("smoke") / "root")


@pytest.fixture(autouse=True)
def _millisecond_points_are_valid(_smoke_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The client judges its own runs and the sweep honours that; these points last ms.
    monkeypatch.setenv("INFERX_ROOT", str(_smoke_root))


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return cached_catalog(Settings().catalog_dir)


@pytest.fixture(scope="session")
def policy() -> SweepPolicy:
    return load_policy(Settings().catalog_dir)


@pytest.fixture(scope="session")
def seed_jobs() -> list[BenchmarkJob]:
    return recipe_jobs(SEED)


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def sim_backend(catalog: Catalog, log_dir: Path, **sim: object) -> SweepBackend:
    """The subprocess simulator, fast, with ``sim`` overriding the simulator options."""
    return simulator_backend(catalog, log_dir, FAST_SIM.model_copy(update=sim))


def policy_data() -> PolicyData:
    """The recipe layer's policy data (image facts, version gates, client Python)."""
    return cached_policy(Settings().catalog_dir)
