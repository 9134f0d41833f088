"""Shared fixtures of the simulator tests: the repository catalog and a config factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inferx_pipeline.settings import Settings
from inferx_pipeline.sim.config import SimConfig

MakeConfig = Callable[..., SimConfig]


@pytest.fixture(scope="session")
def catalog_dir() -> Path:
    """The repository's ``catalog/``."""
    return Settings().catalog_dir


@pytest.fixture
def make_config(catalog_dir: Path) -> MakeConfig:
    """SimConfig for qwen3.8-27b on one H100 unless overridden; no load time."""

    def make(**overrides: Any) -> SimConfig:
        fields: dict[str, Any] = {
            "sku": "h100",
            "model_family": "qwen3.8-27b",
            "catalog_dir": catalog_dir,
            "load_time_s": 0.0,
            "max_model_len": 4096,
        }
        return SimConfig(**(fields | overrides))

    return make
