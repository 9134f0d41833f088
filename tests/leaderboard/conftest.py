"""Shared fixtures for the leaderboard tests: the real catalog, its policy, synthetic rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from inferx_pipeline.catalog import Catalog, load_catalog
from inferx_pipeline.leaderboard.build import SiteManifest, build_site
from inferx_pipeline.leaderboard.config import LeaderboardConfig, load_leaderboard_config
from inferx_pipeline.leaderboard.synthetic import synthetic_frame

CATALOG_DIR = Path(__file__).resolve().parents[2] / "catalog"
GENERATED_AT = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(CATALOG_DIR)


@pytest.fixture(scope="session")
def config() -> LeaderboardConfig:
    return load_leaderboard_config(CATALOG_DIR)


@pytest.fixture(scope="session")
def sweep(catalog: Catalog) -> pd.DataFrame:
    """About 4,000 rows: 8 recipes x 7 images x 72 points, one recipe regressing."""
    return synthetic_frame(catalog, 4000, images=7, seed=1)


@pytest.fixture(scope="session")
def built_site(
    tmp_path_factory: pytest.TempPathFactory,
    sweep: pd.DataFrame,
    catalog: Catalog,
    config: LeaderboardConfig,
) -> tuple[Path, SiteManifest]:
    out = tmp_path_factory.mktemp("site") / "site"
    return out, build_site(sweep, out, catalog, config, generated_at=GENERATED_AT)
