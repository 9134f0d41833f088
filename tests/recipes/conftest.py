"""Shared fixtures for the recipe tests: the real catalog, golden curves and policy data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.golden import GoldenRegistry, load_golden
from inferx_pipeline.recipes.loader import LoadResult, load_recipes
from inferx_pipeline.recipes.policy.data import PolicyData, cached_policy

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path("tests/fixtures/recipes")
# The YAML bounds of catalog/gate.yaml, for tests that read YAML without the loader.
LIMITS = cached_policy(ROOT / "catalog").yaml_limits


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return cached_catalog(ROOT / "catalog")


@pytest.fixture(scope="session")
def golden() -> GoldenRegistry:
    return load_golden(ROOT / "golden_al_distribution")


@pytest.fixture(scope="session")
def policy() -> PolicyData:
    return cached_policy(ROOT / "catalog")


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run with the checkout as working directory, so error lines carry relative paths."""
    monkeypatch.chdir(ROOT)
    yield ROOT


@pytest.fixture
def load(
    at_root: Path, catalog: Catalog, golden: GoldenRegistry, policy: PolicyData
) -> Callable[..., LoadResult]:
    """load(*paths) -> LoadResult with the real catalog, curves and policy data."""

    def _load(*paths: str | Path) -> LoadResult:
        return load_recipes([Path(p) for p in paths], catalog=catalog, golden=golden, policy=policy)

    return _load
