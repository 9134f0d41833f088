"""Fixtures of the results tests: the same store tests run on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferx_pipeline.results.store import ResultStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty database: a SQLite file, or a fresh database on the private cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[ResultStore]:
    """A migrated store on ``store_url``."""
    opened = ResultStore(store_url)
    yield opened
    opened.close()
