"""Jobs from the shipped recipes, and variants of them, for the adapter tests."""

from __future__ import annotations

from typing import Any

from inferx_pipeline.catalog import Sku, cached_catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings


def recipe_jobs(recipe_id: str) -> list[BenchmarkJob]:
    """Every job of the shipped recipe ``recipe_id``."""
    request = MatrixRequest(paths=(), selection=Selection(recipes=(recipe_id,)))
    return build_matrix(request, Settings())


def catalog_sku(sku: str) -> Sku:
    return cached_catalog(Settings().catalog_dir).sku(sku)


def with_spec(job: BenchmarkJob, **spec: Any) -> BenchmarkJob:
    """``job`` with its speculative-decoding block changed."""
    arm = {"arm": spec["method"]} if "method" in spec else {}
    return job.evolve(spec=job.spec.model_copy(update={**arm, **spec}))
