"""Shared fixtures for the matrix tests: catalog, golden curves, runners, a recipe builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inferx_pipeline.catalog import Catalog, cached_catalog
from inferx_pipeline.golden import GoldenRegistry, load_golden
from inferx_pipeline.matrix.import_defaults import ImportDefaults, cached_import_defaults
from inferx_pipeline.matrix.runners import RunnerCatalog, cached_runners
from inferx_pipeline.recipes.schema import Recipe
from tests.paths import ROOT


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return cached_catalog(ROOT / "catalog")


@pytest.fixture(scope="session")
def golden() -> GoldenRegistry:
    return load_golden(ROOT / "golden_al_distribution")


@pytest.fixture(scope="session")
def runners() -> RunnerCatalog:
    return cached_runners(ROOT / "catalog")


@pytest.fixture(scope="session")
def import_defaults() -> ImportDefaults:
    return cached_import_defaults(ROOT / "catalog")


def recipe_doc(**over: Any) -> dict[str, Any]:
    """A small valid single-node fixed-seq-len recipe document; ``over`` replaces keys."""
    doc: dict[str, Any] = {
        "id": "r1",
        "model": {
            "hf-id": "deepseek-ai/DeepSeek-R1-0528",
            "model-prefix": "dsr1",
            "precision": "fp8",
        },
        "sku": "h200",
        "engine": {"framework": "vllm", "image": "vllm/vllm-openai:v0.11.0"},
        "scenarios": {
            "fixed-seq-len": [
                {
                    "isl": 8192,
                    "osl": 1024,
                    "search-space": [{"tp": 8, "conc-start": 4, "conc-end": 100}],
                }
            ]
        },
    }
    doc.update(over)
    return doc


@pytest.fixture
def make_recipe() -> Callable[..., Recipe]:
    def build(**over: Any) -> Recipe:
        return Recipe.model_validate(recipe_doc(**over))

    return build
