"""Which results a reader wants: a filter model and its SQL ``WHERE`` clauses."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field
from sqlalchemy import ColumnElement, tuple_

from inferx_pipeline.results.record import Status
from inferx_pipeline.results.tables import RESULTS
from inferx_pipeline.strict import StrictModel

# filter field -> results column it restricts with IN (...)
_IN_COLUMNS: dict[str, str] = {
    "models": "model",
    "model_families": "model_family",
    "scenarios": "scenario",
    "skus": "sku",
    "vendors": "vendor",
    "frameworks": "framework",
    "precisions": "precision",
    "spec_methods": "spec_method",
    "recipe_ids": "recipe_id",
    "image_tags": "image_tag",
    "sources": "source",
}


class ResultFilter(StrictModel):
    """Restrict a read; empty tuples and None mean "any"."""

    models: tuple[str, ...] = Field(default=(), description="Hugging Face model ids.")
    model_families: tuple[str, ...] = Field(default=(), description="Family prefixes (dsr1).")
    scenarios: tuple[str, ...] = Field(default=(), description="fixed-seq-len, agentic-coding.")
    skus: tuple[str, ...] = Field(default=(), description="GPU SKU keys (h200).")
    vendors: tuple[str, ...] = Field(default=(), description="nvidia, amd, none.")
    frameworks: tuple[str, ...] = Field(default=(), description="vllm, sglang, trt, atom, sim.")
    precisions: tuple[str, ...] = Field(default=(), description="fp8, fp4, bf16, ...")
    spec_methods: tuple[str, ...] = Field(default=(), description="none, mtp, eagle3, ...")
    recipe_ids: tuple[str, ...] = Field(default=(), description="Recipe ids.")
    image_tags: tuple[str, ...] = Field(default=(), description="Image tags.")
    sources: tuple[str, ...] = Field(default=(), description="inferx, inferencex, vllm-bench.")
    valid_only: bool = Field(default=False, description="Only rows with valid = true.")
    statuses: tuple[Status, ...] = Field(default=(), description="Only these statuses (ok, ...).")
    measured_only: bool = Field(
        default=False,
        description="Only rows with positive tput_per_gpu and intvty_median (drawable points).",
    )
    recipe_images: tuple[tuple[str, str], ...] = Field(
        default=(), description="Only these (recipe id, image tag) pairs."
    )
    simulated: bool | None = Field(default=None, description="Only simulated (or only real).")
    since: datetime | None = Field(default=None, description="started_at >= since (UTC).")
    until: datetime | None = Field(default=None, description="started_at < until (UTC).")
    pull_requests: Literal["exclude", "include", "only"] = Field(
        default="exclude",
        description="Rows of pull requests' unofficial runs: left out (the official view, "
        "the default), included, or the only ones read.",
    )
    pr_numbers: tuple[int, ...] = Field(default=(), description="Only these pull requests.")
    run_ids: tuple[str, ...] = Field(default=(), description="Only these runs.")


def where_clauses(filters: ResultFilter) -> list[ColumnElement[bool]]:
    """The conjunction of SQL conditions ``filters`` asks for (empty list: every row)."""
    clauses: list[ColumnElement[bool]] = []
    for field, column in _IN_COLUMNS.items():
        values: tuple[str, ...] = getattr(filters, field)
        if values:
            clauses.append(RESULTS.c[column].in_(values))
    if filters.recipe_images:
        pair = tuple_(RESULTS.c.recipe_id, RESULTS.c.image_tag)
        clauses.append(pair.in_(filters.recipe_images))
    if filters.valid_only:
        clauses.append(RESULTS.c.valid.is_(True))
    if filters.statuses:
        clauses.append(RESULTS.c.status.in_(filters.statuses))
    if filters.measured_only:
        clauses.append(RESULTS.c.tput_per_gpu > 0)
        clauses.append(RESULTS.c.intvty_median > 0)
    if filters.simulated is not None:
        clauses.append(RESULTS.c.simulated.is_(filters.simulated))
    if filters.since is not None:
        clauses.append(RESULTS.c.started_at >= filters.since)
    if filters.until is not None:
        clauses.append(RESULTS.c.started_at < filters.until)
    if filters.pull_requests == "exclude":
        clauses.append(RESULTS.c.pr_number.is_(None))
    elif filters.pull_requests == "only":
        clauses.append(RESULTS.c.pr_number.is_not(None))
    if filters.pr_numbers:
        clauses.append(RESULTS.c.pr_number.in_(filters.pr_numbers))
    if filters.run_ids:
        clauses.append(RESULTS.c.run_id.in_(filters.run_ids))
    return clauses
